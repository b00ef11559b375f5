import crypto from 'node:crypto';
import type { StepUpFactor } from './step-up.ts';
import { deploymentMailer } from './mailer.ts';
import { newNumericCode, tokenHash } from './tokens.ts';

/**
 * The e-mail step-up factor (`emailOtp`): enrolled when the user has a
 * verified real address (wallet accounts' synthetic addresses are never
 * verified, so never used) and the deployment has a mailer. Each challenge
 * mints a 6-digit code, mails it, and keeps only its hash on the challenge
 * row, bound to that challenge: the code is good for that one answer.
 */

const codeHash = (challengeId: string, code: string) => tokenHash(`${challengeId}:${code}`);

export const emailOtpFactor: StepUpFactor = {
  name: 'emailOtp',
  proofField: 'emailOtp',
  enrolled: (user, services) => Boolean(user.email && user.email_verified_at && services.config.mailer),
  async issue(services, user, challenge) {
    const code = newNumericCode();
    await deploymentMailer(services.config)!.send({
      to: user.email!,
      subject: `Your Flowgate confirmation code: ${code}`,
      text: [
        `Your confirmation code for ${challenge.action} is ${code}.`,
        '',
        'Send it as emailOtp together with the wallet signature. It works once and expires in 5 minutes.',
        'If you did not start this, someone is using your session: sign out everywhere and do not sign anything.',
      ].join('\n'),
    });
    return { emailCodeHash: codeHash(challenge.id, code) };
  },
  async check(_services, _user, value, challenge) {
    if (!challenge.email_code_hash) return false;
    return crypto.timingSafeEqual(Buffer.from(codeHash(challenge.id, value)), Buffer.from(challenge.email_code_hash));
  },
};
