import { deliver, joinUrl, type AttemptLog } from './delivery.ts';
import type { EmailMessage } from './email.ts';
import type { SendOptions } from './send-options.ts';

/**
 * SendGrid v3: `POST /v3/mail/send` with a Bearer key answers 202 and the
 * message id in `X-Message-Id`; refusals are `{errors: [{message}]}`.
 * SendGrid has no idempotency key: see delivery.ts for when a send is not repeated.
 */

export const SENDGRID_API_BASE_URL = 'https://api.sendgrid.com';

export async function sendgridSend(
  credentials: { apiKey: string },
  apiBaseUrl: string | undefined,
  message: EmailMessage,
  options: SendOptions,
): Promise<{ messageId?: string; delivery: AttemptLog }> {
  const content = [{ type: 'text/plain', value: message.text }, ...(message.html ? [{ type: 'text/html', value: message.html }] : [])];
  const res = await deliver(
    {
      method: 'POST',
      url: joinUrl(apiBaseUrl ?? SENDGRID_API_BASE_URL, '/v3/mail/send'),
      headers: { authorization: `Bearer ${credentials.apiKey}` },
      json: {
        personalizations: [{ to: message.to.map((email) => ({ email })) }],
        from: { email: message.from.email, ...(message.from.name ? { name: message.from.name } : {}) },
        subject: message.subject,
        content,
      },
    },
    { ...options, provider: 'SendGrid', secrets: [credentials.apiKey] },
  );
  const id = res.response.headers['x-message-id'];
  return { ...(id ? { messageId: id } : {}), delivery: res.log };
}

/** `GET /v3/scopes`: lists the key's scopes, sends nothing. */
export async function checkSendgrid(credentials: { apiKey: string }, apiBaseUrl: string | undefined, options: SendOptions): Promise<string> {
  const res = await deliver(
    { method: 'GET', url: joinUrl(apiBaseUrl ?? SENDGRID_API_BASE_URL, '/v3/scopes'), headers: { authorization: `Bearer ${credentials.apiKey}` } },
    { ...options, provider: 'SendGrid', secrets: [credentials.apiKey], maxAttempts: 1 },
  );
  const scopes = (res.body as { scopes?: unknown } | undefined)?.scopes;
  const canSend = Array.isArray(scopes) && scopes.includes('mail.send');
  return `SendGrid accepted the API key (${Array.isArray(scopes) ? scopes.length : 0} scopes${canSend ? ', including mail.send' : '; mail.send is not among them'}).`;
}
