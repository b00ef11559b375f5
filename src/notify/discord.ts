import { deliver, rebase, type AttemptLog } from './delivery.ts';
import { LIMITS, truncateText } from './limits.ts';
import type { SendOptions } from './send-options.ts';

/**
 * Discord through a channel webhook: `POST <webhookUrl>?wait=true` with
 * `{content, username?}` answers the created message (its `id`). Discord
 * has no idempotency key: see delivery.ts for when a send is not repeated.
 */

export const DISCORD_API_BASE_URL = 'https://discord.com';

export interface DiscordConfig {
  webhookUrl: string;
  apiBaseUrl?: string;
}

export async function sendDiscordMessage(
  config: DiscordConfig,
  message: { content: string; username?: string },
  options: SendOptions,
): Promise<{ messageId?: string; truncated: boolean; delivery: AttemptLog }> {
  const content = truncateText(message.content, LIMITS.discordContent);
  const url = new URL(rebase(config.webhookUrl, config.apiBaseUrl));
  url.searchParams.set('wait', 'true');
  const username = message.username ? truncateText(message.username, LIMITS.discordUsername).text : undefined;
  const res = await deliver(
    { method: 'POST', url: url.href, json: { content: content.text, ...(username ? { username } : {}), allowed_mentions: { parse: [] } } },
    { ...options, provider: 'Discord', secrets: [config.webhookUrl] },
  );
  const id = (res.body as { id?: unknown } | undefined)?.id;
  return { ...(typeof id === 'string' ? { messageId: id } : {}), truncated: content.truncated, delivery: res.log };
}

/** GET on the webhook: answers the webhook's name and channel without posting anything. */
export async function checkDiscord(config: DiscordConfig, options: SendOptions): Promise<string> {
  const res = await deliver(
    { method: 'GET', url: rebase(config.webhookUrl, config.apiBaseUrl) },
    { ...options, provider: 'Discord', secrets: [config.webhookUrl], maxAttempts: 1 },
  );
  const body = res.body as { name?: unknown; channel_id?: unknown } | undefined;
  return `Discord webhook${typeof body?.name === 'string' ? ` "${body.name}"` : ''} answered (channel ${String(body?.channel_id ?? 'unknown')}).`;
}
