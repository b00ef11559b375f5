import { z } from 'zod';
import { defineTool, type ToolContext } from './define.ts';
import { organizationView, spendPerIp } from './auth.ts';
import { startSession } from './session-start.ts';
import { rateLimitedError } from '../src/guards/rate-limit.ts';
import { CAPTCHA_HEADER, requireCaptcha } from '../src/auth/captcha.ts';
import { deploymentMailer } from '../src/auth/mailer.ts';
import {
  authenticateWithPassword,
  EMAIL_TOKEN_TTL_MS,
  emailSignUpBinding,
  normalizeEmail,
  requestEmailLink,
  requireMailer,
  signUpWithEmail,
  verifyEmailToken,
  type EmailAccount,
} from '../src/auth/email-accounts.ts';
import { requireStepUp, stepUpProofFields } from '../src/auth/step-up.ts';
import { requirePrincipal } from './authorize.ts';
import { tokenHash } from '../src/auth/tokens.ts';
import { signUpCookie } from '../src/auth/session-cookie.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { isServiceError } from '../src/errors.ts';

/**
 * E-mail sign-up (behind the optional CAPTCHA), the verification link and
 * e-mail sign-in. REST only: these set the browser session cookie.
 */

const email = z.email({ error: 'expected an e-mail address' }).max(254).describe('The e-mail address');
const password = z.string().min(8, 'at least 8 characters').max(256, 'at most 256 characters').describe('The password (8 to 256 characters)');

const accountOutput = z.object({
  user: z.object({ id: z.string(), email: z.string() }),
  organization: organizationView,
  session: z
    .object({ id: z.string(), expiresAt: z.string() })
    .nullable()
    .describe(
      'The session opened (cookie set); null when the link only confirmed an address added to an account, which signs nobody in, or was opened in another browser than the one that signed up',
    ),
  created: z.boolean().describe('true when this call created the organization (first verification)'),
  next: z.string().optional().describe('What to do when no session was opened'),
});

const deps = (ctx: ToolContext) => ({
  store: ctx.services.store,
  secrets: ctx.services.secrets,
  config: ctx.services.config,
  mailer: deploymentMailer(ctx.services.config),
});

const SIGN_UP_ANSWER = {
  status: 'verification_sent' as const,
  message:
    'Check the inbox of this address: the next step is in the message just sent (a verification link valid 24 hours). The same answer is given whether or not the address already has an account.',
};

export const signUpEmail = defineTool({
  name: 'sign_up_email',
  title: 'E-mail sign-up',
  description:
    'Creates an e-mail and password account and mails a one-time verification link (24 h); following it (GET /api/auth/verify-email?token=) opens the session and, the first time, creates the organization and its wallet. When the deployment has a CAPTCHA, send its response in the x-captcha-response header (or captchaToken). Answers the same for a known address (whose owner gets a notice instead).',
  scope: 'public',
  input: z.object({
    email,
    password,
    name: z.string().trim().min(1).max(80).optional().describe('Display name, used for the organization name'),
    captchaToken: z.string().max(8192).optional().describe('The CAPTCHA widget response, when the x-captcha-response header is not used'),
  }),
  output: z.object({ status: z.literal('verification_sent'), message: z.string() }),
  rest: { method: 'POST', path: '/api/auth/sign-up/email' },
  mcp: false,
  async handler(input, ctx) {
    await spendPerIp(ctx, 'emailSignUpPerIp');
    await requireCaptcha(ctx.services.config, ctx.request?.headers[CAPTCHA_HEADER] ?? input.captchaToken, ctx.ip);
    const d = deps(ctx);
    requireMailer(d.mailer);
    // Per address too, so nobody floods one inbox; counted alike for known and new addresses.
    const perAddress = await ctx.services.rateLimiter.consume('emailSignUpPerAddress', tokenHash(normalizeEmail(input.email)));
    if (!perAddress.allowed) throw rateLimitedError('emailSignUpPerAddress', perAddress, 'sign-up mails to one address are limited');
    const { binding } = await signUpWithEmail(d, input);
    ctx.setHeader('Set-Cookie', signUpCookie(ctx.services.config.baseUrl, binding, EMAIL_TOKEN_TTL_MS / 1000));
    return SIGN_UP_ANSWER;
  },
});

/**
 * `fromLink`: the mailed link itself, a GET any page can send. It opens a session only in the browser that signed up
 * (its sign-up cookie matches the link); elsewhere it verifies the address and creates the organization, and the
 * owner signs in with the password. Otherwise an attacker's page could sign a visitor into the attacker's new
 * account, where whatever the visitor saved (integrations, keys) would be the attacker's.
 */
async function followLink(token: string, ctx: ToolContext, fromLink = false) {
  const { kind, account } = await verifyEmailToken(deps(ctx), token);
  if (kind === 'sign_up' && (!fromLink || ctx.signUpBinding === emailSignUpBinding(token))) return sessionAnswer(ctx, account, 'email_link');
  if (kind === 'sign_up') {
    if (account.created)
      await recordAudit(ctx.services.store, {
        organizationId: account.organization.id,
        actor: null, // whoever followed the mailed link, in another browser
        action: 'sign_up',
        target: account.email,
        ip: ctx.ip,
        details: { method: 'email_link', session: false },
      });
    return {
      user: { id: account.userId, email: account.email },
      organization: account.organization,
      session: null,
      created: account.created,
      next: 'Address verified. This browser did not sign up, so it is not signed in: sign in with POST /api/auth/sign-in/email {email, password}.',
    };
  }
  // A link that added an address to an account confirms the address only: whoever holds it is not signed in by it.
  await recordAudit(ctx.services.store, {
    organizationId: account.organization.id,
    actor: null, // whoever followed the mailed link; the account is the target
    action: 'email_changed',
    target: account.userId,
    ip: ctx.ip,
  });
  return { user: { id: account.userId, email: account.email }, organization: account.organization, session: null, created: false };
}

async function sessionAnswer(ctx: ToolContext, account: EmailAccount, method: string) {
  const session = await startSession(ctx, {
    userId: account.userId,
    organizationId: account.organization.id,
    created: account.created,
    target: account.email,
    details: { method },
  });
  return { user: { id: account.userId, email: account.email }, organization: account.organization, session, created: account.created };
}

const token = z.string().min(20).max(200).describe('The token of the link mailed at sign-up');
const VERIFY_DESCRIPTION =
  'Follows the verification link mailed at sign-up: verifies the address, sets the password chosen then, opens the session (cookie) and, the first time, creates the organization and its wallet. A link works once and expires after 24 hours.';

export const verifyEmail = defineTool({
  name: 'verify_email',
  title: 'Verify an e-mail address',
  description: VERIFY_DESCRIPTION,
  scope: 'public',
  input: z.object({ token }),
  output: accountOutput,
  rest: { method: 'POST', path: '/api/auth/verify-email', query: ['token'] },
  mcp: false,
  handler: (input, ctx) => followLink(input.token, ctx),
});

/** The link itself, as a mail client opens it. */
export const verifyEmailLink = defineTool({
  name: 'verify_email_link',
  title: 'Verify an e-mail address (link)',
  description: VERIFY_DESCRIPTION,
  scope: 'public',
  input: z.object({ token }),
  output: accountOutput,
  rest: { method: 'GET', path: '/api/auth/verify-email' },
  mcp: false,
  handler: (input, ctx) => followLink(input.token, ctx, true),
});

export const signInEmail = defineTool({
  name: 'sign_in_email',
  title: 'E-mail sign-in',
  description:
    'Signs in with a verified e-mail address and its password and sets the session cookie. An unknown address, a wrong password and an unverified address all answer 401 invalid_credentials. Limited per IP.',
  scope: 'public',
  input: z.object({ email, password: z.string().min(1).max(256).describe('The password') }),
  output: accountOutput,
  rest: { method: 'POST', path: '/api/auth/sign-in/email' },
  mcp: false,
  async handler(input, ctx) {
    await spendPerIp(ctx, 'emailSignInPerIp');
    let account: EmailAccount;
    try {
      account = await authenticateWithPassword(deps(ctx), input);
    } catch (error) {
      if (isServiceError(error)) {
        await recordAudit(ctx.services.store, {
          organizationId: null,
          actor: null,
          action: 'sign_in_failed',
          target: normalizeEmail(input.email),
          outcome: 'failure',
          ip: ctx.ip,
          details: { method: 'email' },
        });
      }
      throw error;
    }
    return sessionAnswer(ctx, account, 'email');
  },
});

export const linkEmail = defineTool({
  name: 'link_email',
  title: 'Add an e-mail address to the account',
  description:
    'Mails a confirmation link to a real address for the signed-in account (a wallet account has only a synthetic one). Once confirmed, step-up also asks for the 6-digit code mailed to it (emailOtp). Behind step-up (action email_change): the first call answers 401 with a challenge.',
  scope: 'session',
  input: z.object({ email, ...stepUpProofFields }),
  output: z.object({ status: z.literal('verification_sent'), message: z.string() }),
  rest: { method: 'POST', path: '/api/user/email' },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const d = deps(ctx);
    requireMailer(d.mailer);
    await requireStepUp(ctx.services, principal, 'email_change', input, ctx.ip);
    // Each call mails an address the caller names from the operator's mailer: bounded per user and day, apart from the
    // step-up budget (a completed step-up resets that one) and from the per-address limit (a new address each time).
    const perUser = await ctx.services.rateLimiter.consume('emailLinkPerUser', principal.userId);
    if (!perUser.allowed) throw rateLimitedError('emailLinkPerUser', perUser, 'confirmation mails per account are limited');
    const perAddress = await ctx.services.rateLimiter.consume('emailSignUpPerAddress', tokenHash(normalizeEmail(input.email)));
    if (!perAddress.allowed) throw rateLimitedError('emailSignUpPerAddress', perAddress, 'mails to one address are limited');
    await requestEmailLink(d, { userId: principal.userId, email: input.email });
    await recordAudit(ctx.services.store, { organizationId: principal.organizationId, actor: principal, action: 'email_link_requested', ip: ctx.ip });
    return {
      status: 'verification_sent' as const,
      message: 'A confirmation link is on its way to that address (valid 24 hours); the address is added when the link is followed.',
    };
  },
});

export const emailAuthTools = [signUpEmail, verifyEmail, verifyEmailLink, signInEmail, linkEmail];
