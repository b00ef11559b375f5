import { badRequest } from '../errors.ts';
import { deliver, deliveryError, joinUrl, rebase, type AttemptLog } from './delivery.ts';
import { LIMITS, truncateText } from './limits.ts';
import type { SendOptions } from './send-options.ts';

/**
 * Slack, two ways: with a bot token, the Web API `POST /api/chat.postMessage`
 * `{channel, text}` (answers `{ok, ts}`; `ts` is the message id); else the
 * incoming webhook `POST <webhookUrl>` `{text}` (answers `ok`, no id; it
 * posts to the channel it was made for). The Web API reports refusals as
 * HTTP 200 with `ok: false`. Slack has no idempotency key.
 */

export const SLACK_API_BASE_URL = 'https://slack.com';

export interface SlackConfig {
  webhookUrl?: string;
  botToken?: string;
  channel?: string;
  apiBaseUrl?: string;
}

const secretsOf = (config: SlackConfig) => [config.webhookUrl, config.botToken].filter(Boolean);

/** A Web API answer with `ok: false` is a refusal whatever its HTTP status. */
function checkOk(body: unknown, log: AttemptLog, secrets: unknown[]): void {
  const b = body as { ok?: unknown; error?: unknown } | undefined;
  if (b?.ok === true) return;
  const reason = typeof b?.error === 'string' ? b.error : 'no ok in the answer';
  throw deliveryError('Slack', `Slack refused the request: ${reason}`, log, secrets);
}

export async function sendSlackMessage(
  config: SlackConfig,
  message: { channel?: string; text: string },
  options: SendOptions,
): Promise<{ messageId?: string; truncated: boolean; delivery: AttemptLog }> {
  const text = truncateText(message.text, LIMITS.slackText);
  const secrets = secretsOf(config);
  const channel = message.channel || config.channel;
  if (config.botToken) {
    if (!channel)
      throw badRequest('invalid_config', 'slackChannel is required with a Slack bot token: the channel id or #name to post to.', { field: 'slackChannel' });
    const res = await deliver(
      {
        method: 'POST',
        url: joinUrl(config.apiBaseUrl ?? SLACK_API_BASE_URL, '/api/chat.postMessage'),
        headers: { authorization: `Bearer ${config.botToken}` },
        json: { channel, text: text.text },
      },
      { ...options, provider: 'Slack', secrets },
    );
    checkOk(res.body, res.log, secrets);
    const ts = (res.body as { ts?: unknown }).ts;
    return { ...(typeof ts === 'string' ? { messageId: ts } : {}), truncated: text.truncated, delivery: res.log };
  }
  if (!config.webhookUrl) throw badRequest('invalid_config', 'The Slack integration has neither botToken nor webhookUrl.');
  const res = await deliver(
    { method: 'POST', url: rebase(config.webhookUrl, config.apiBaseUrl), json: { text: text.text } },
    { ...options, provider: 'Slack', secrets },
  );
  return { truncated: text.truncated, delivery: res.log };
}

/** Bot token: `auth.test` (posts nothing). Webhook only: a test message, the one check a webhook offers. */
export async function checkSlack(config: SlackConfig, testText: string, options: SendOptions): Promise<string> {
  const secrets = secretsOf(config);
  if (config.botToken) {
    const res = await deliver(
      {
        method: 'POST',
        url: joinUrl(config.apiBaseUrl ?? SLACK_API_BASE_URL, '/api/auth.test'),
        headers: { authorization: `Bearer ${config.botToken}` },
      },
      { ...options, provider: 'Slack', secrets, maxAttempts: 1 },
    );
    checkOk(res.body, res.log, secrets);
    const b = res.body as { team?: unknown; user?: unknown };
    return `Slack auth.test passed (team ${String(b.team ?? 'unknown')}, bot user ${String(b.user ?? 'unknown')}).`;
  }
  await sendSlackMessage(config, { text: testText }, options);
  return 'Test message delivered to the Slack incoming webhook.';
}
