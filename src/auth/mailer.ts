import type { Config } from '../config.ts';
import { ServiceError } from '../errors.ts';
import { sendEmail } from '../notify/email.ts';

/**
 * The deployment's own mail: verification links, sign-up notices and step-up
 * codes, through the provider client of src/notify (Resend or SendGrid), under
 * the egress policy (FLOWGATE_HTTP_ALLOW_HOSTS). A provider failure is
 * logged without the key and answered as 503 `email_unavailable`: anonymous
 * callers learn nothing about the provider or its account.
 */

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: OutgoingMail): Promise<void>;
}

/** Seconds one message may take across the provider's retries. */
const SEND_BUDGET_MS = 15_000;

export function deploymentMailer(config: Config): Mailer | null {
  const settings = config.mailer;
  if (!settings) return null;
  return {
    async send(mail) {
      try {
        await sendEmail({
          provider: settings.provider,
          credentials: { apiKey: settings.apiKey },
          apiBaseUrl: settings.apiBaseUrl,
          message: { from: { email: settings.from, name: 'Flowgate' }, to: mail.to, subject: mail.subject, text: mail.text },
          allowList: config.httpAllowHosts,
          budgetMs: SEND_BUDGET_MS,
        });
      } catch (error) {
        // The notify errors carry no credential (scrubbed there); the message still stays in the log only.
        console.error(`[flowgate] deployment mail through ${settings.provider} failed: ${error instanceof Error ? error.message : String(error)}`);
        throw new ServiceError(503, 'email_unavailable', 'The gateway could not send e-mail just now; try again in a few minutes.');
      }
    },
  };
}
