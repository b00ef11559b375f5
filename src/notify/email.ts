import { z } from 'zod';
import { badRequest } from '../errors.ts';
import type { AttemptLog } from './delivery.ts';
import { LIMITS, truncateText } from './limits.ts';
import { resendSend } from './resend.ts';
import { sendgridSend } from './sendgrid.ts';
import type { SendOptions } from './send-options.ts';

/**
 * E-mail through SendGrid or Resend, for workflow steps and for any other
 * part of the gateway that mails (sign-in codes). Bad input (recipients,
 * sender, sizes) is a 400 `invalid_config`; a provider that does not take
 * the message is a 502 `notification_failed` with the attempt log.
 */

export const EMAIL_PROVIDERS = ['sendgrid', 'resend'] as const;
export type EmailProvider = (typeof EMAIL_PROVIDERS)[number];

/** A message as the providers get it: checked, recipients split, sizes within limits. */
export interface EmailMessage {
  from: { email: string; name?: string };
  to: string[];
  subject: string;
  text: string;
  html?: string;
}

export interface SendEmailInput extends SendOptions {
  provider: EmailProvider;
  credentials: { apiKey: string };
  /** Defaults to the provider's official host; a relay may carry a path prefix. */
  apiBaseUrl?: string;
  message: { from: string | { email: string; name?: string }; to: string | string[]; subject: string; text: string; html?: string };
  /** Sent where the provider deduplicates by it (Resend): the same key never sends twice. */
  idempotencyKey?: string;
}

const email = z.email();

/** `a@x.io, b@y.io` or an array: each a plain address. */
export function parseRecipients(to: string | string[], max: number): string[] {
  const list = (Array.isArray(to) ? to : to.split(/[,;]/)).map((s) => s.trim()).filter(Boolean);
  if (list.length === 0)
    throw badRequest('invalid_config', 'emailTo is empty: give one recipient address, or several separated by commas.', { field: 'emailTo' });
  const bad = list.filter((address) => !email.safeParse(address).success);
  if (bad.length) {
    throw badRequest('invalid_config', `emailTo has ${bad.length === 1 ? 'an address' : 'addresses'} that is not valid: ${bad.slice(0, 5).join(', ')}.`, {
      field: 'emailTo',
      received: bad.slice(0, 5),
    });
  }
  if (list.length > max)
    throw badRequest('invalid_config', `emailTo has ${list.length} recipients; this provider takes at most ${max} per message.`, { field: 'emailTo' });
  return list;
}

/** Checks and shapes a message for `provider`; the subject is cut with a marker, an oversized body refused. */
export function prepareEmail(provider: EmailProvider, message: SendEmailInput['message']): EmailMessage & { truncated: boolean } {
  const from = typeof message.from === 'string' ? { email: message.from } : message.from;
  if (!from?.email || !email.safeParse(from.email).success) {
    throw badRequest('invalid_config', 'The sender address is missing or not valid: set fromEmail on the e-mail integration.', { field: 'fromEmail' });
  }
  const to = parseRecipients(message.to, provider === 'resend' ? LIMITS.resendRecipients : LIMITS.sendgridRecipients);
  const subject = truncateText(message.subject.replace(/[\r\n]+/g, ' ').trim(), LIMITS.emailSubject);
  if (!subject.text) throw badRequest('invalid_config', 'emailSubject is empty.', { field: 'emailSubject' });
  const size = Buffer.byteLength(message.text) + Buffer.byteLength(message.html ?? '');
  if (size > LIMITS.emailBodyBytes) {
    throw badRequest('invalid_config', `The e-mail body is ${size} bytes; the limit is ${LIMITS.emailBodyBytes} bytes. Send a link to large content instead.`, {
      field: 'emailBody',
    });
  }
  return {
    from: { email: from.email, ...(from.name ? { name: from.name } : {}) },
    to,
    subject: subject.text,
    text: message.text,
    ...(message.html ? { html: message.html } : {}),
    truncated: subject.truncated,
  };
}

export async function sendEmail(input: SendEmailInput): Promise<{ messageId?: string; delivery: AttemptLog }> {
  const message = prepareEmail(input.provider, input.message);
  const options = { allowList: input.allowList, signal: input.signal, budgetMs: input.budgetMs, slot: input.slot };
  return input.provider === 'sendgrid'
    ? sendgridSend(input.credentials, input.apiBaseUrl, message, options)
    : resendSend(input.credentials, input.apiBaseUrl, message, { ...options, idempotencyKey: input.idempotencyKey });
}

/** A body that looks like HTML is sent as HTML with a plain-text copy; anything else as text. */
export function bodyParts(body: string): { text: string; html?: string } {
  if (!/<(html|body|p|div|br|a|table|h[1-6]|ul|ol|strong|em|b|i|span)\b[^>]*>/i.test(body)) return { text: body };
  const text = body
    .replace(/<(br|\/p|\/div|\/h[1-6]|\/li|\/tr)\b[^>]*>/gi, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { text, html: body };
}
