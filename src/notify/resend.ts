import { deliver, joinUrl, type AttemptLog } from './delivery.ts';
import type { EmailMessage } from './email.ts';
import type { SendOptions } from './send-options.ts';

/**
 * Resend: `POST /emails` with a Bearer key answers `{id}`; refusals are
 * `{statusCode, name, message}`. Resend deduplicates by `Idempotency-Key`
 * (24 h), so a request that got no answer is repeated with the same key.
 */

export const RESEND_API_BASE_URL = 'https://api.resend.com';

export async function resendSend(
  credentials: { apiKey: string },
  apiBaseUrl: string | undefined,
  message: EmailMessage,
  options: SendOptions & { idempotencyKey?: string },
): Promise<{ messageId?: string; delivery: AttemptLog }> {
  const from = message.from.name ? `${message.from.name.replace(/["<>]/g, '')} <${message.from.email}>` : message.from.email;
  const res = await deliver(
    {
      method: 'POST',
      url: joinUrl(apiBaseUrl ?? RESEND_API_BASE_URL, '/emails'),
      headers: {
        authorization: `Bearer ${credentials.apiKey}`,
        ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey.slice(0, 256) } : {}),
      },
      json: { from, to: message.to, subject: message.subject, text: message.text, ...(message.html ? { html: message.html } : {}) },
    },
    { ...options, provider: 'Resend', secrets: [credentials.apiKey], retryUnanswered: Boolean(options.idempotencyKey) },
  );
  const id = (res.body as { id?: unknown } | undefined)?.id;
  return { ...(typeof id === 'string' ? { messageId: id } : {}), delivery: res.log };
}

/** `GET /domains`: lists the account's domains, sends nothing. */
export async function checkResend(credentials: { apiKey: string }, apiBaseUrl: string | undefined, options: SendOptions): Promise<string> {
  const res = await deliver(
    { method: 'GET', url: joinUrl(apiBaseUrl ?? RESEND_API_BASE_URL, '/domains'), headers: { authorization: `Bearer ${credentials.apiKey}` } },
    { ...options, provider: 'Resend', secrets: [credentials.apiKey], maxAttempts: 1 },
  );
  const domains = (res.body as { data?: unknown } | undefined)?.data;
  return `Resend accepted the API key (${Array.isArray(domains) ? domains.length : 0} domains).`;
}
