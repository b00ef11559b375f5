/**
 * Provider size limits. Chat text over a limit is cut with a visible marker
 * (the message still says something); e-mail that cannot be cut without
 * changing its meaning (recipients, a huge body) is refused instead.
 */

export const TRUNCATION_MARKER = '… [truncated]';

/** `text` cut to `max` characters (code points, so no half emoji), ending with the marker when cut. */
export function truncateText(text: string, max: number): { text: string; truncated: boolean } {
  const chars = Array.from(text);
  if (chars.length <= max) return { text, truncated: false };
  return { text: chars.slice(0, max - Array.from(TRUNCATION_MARKER).length).join('') + TRUNCATION_MARKER, truncated: true };
}

export const LIMITS = {
  /** Discord webhook `content`. */
  discordContent: 2000,
  /** Discord webhook `username`. */
  discordUsername: 80,
  /** Slack truncates `text` past 40,000 characters itself; we cut first so the marker shows. */
  slackText: 40_000,
  /** Telegram `sendMessage` text, after entity parsing. */
  telegramText: 4096,
  /** RFC 5322 line length; providers refuse longer subjects. */
  emailSubject: 998,
  /** Our own bound on an e-mail body (both providers allow far more). */
  emailBodyBytes: 1024 * 1024,
  /** Recipients per message: Resend allows 50, SendGrid 1000. */
  resendRecipients: 50,
  sendgridRecipients: 1000,
} as const;
