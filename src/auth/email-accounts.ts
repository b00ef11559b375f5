import type { Config } from '../config.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../wallets/crypto.ts';
import { ServiceError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { createOrganizationWithOwner } from '../org/organizations.ts';
import { firstMembership } from '../org/accounts.ts';
import type { Role } from './principal.ts';
import type { Mailer } from './mailer.ts';
import { decoyPasswordHash, hashPassword, verifyPassword } from './passwords.ts';
import { isoIn, newToken, tokenHash } from './tokens.ts';

/**
 * E-mail and password accounts. Sign-up mails a one-time verification link
 * (stored hashed, 24 h); following it verifies the address, sets the password
 * chosen in that sign-up, creates the user's organization and wallet on the
 * first verification and opens a session. Nothing here tells a caller
 * whether an address is registered: a sign-up for a known address answers
 * the same and mails its owner a notice instead; every sign-in refusal is the
 * same `invalid_credentials`, after the same scrypt work.
 */

export const EMAIL_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
const VERIFY_EMAIL = 'verify_email';
const LINK_EMAIL = 'link_email';

export interface EmailAccountDeps {
  store: Store;
  secrets: SecretBox;
  config: Config;
  mailer: Mailer | null;
}

export interface EmailAccount {
  userId: string;
  email: string;
  organization: { id: string; slug: string; name: string; role: Role };
  created: boolean;
}

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export const verificationLink = (baseUrl: string, token: string) => `${baseUrl}/api/auth/verify-email?token=${encodeURIComponent(token)}`;

/** The mailer, or 403 when this deployment has none (no link could ever arrive). */
export function requireMailer(mailer: Mailer | null): Mailer {
  if (!mailer) {
    throw new ServiceError(
      403,
      'email_sign_up_disabled',
      'E-mail is off on this gateway: sign-up and address links need a mailer (FLOWGATE_EMAIL_PROVIDER, FLOWGATE_EMAIL_API_KEY, FLOWGATE_EMAIL_FROM). Sign in with a wallet instead (POST /api/auth/siwe/nonce).',
    );
  }
  return mailer;
}

/** The normalized address, refusing the synthetic domain of wallet accounts (it receives no mail). */
function deliverableEmail(config: Config, raw: string): string {
  const email = normalizeEmail(raw);
  if (email.endsWith(`@${config.walletEmailDomain}`)) {
    throw new ServiceError(
      400,
      'invalid_input',
      `Addresses at ${config.walletEmailDomain} stand for wallet accounts and receive no mail; use a real address.`,
      {
        issues: [{ path: ['email'], message: 'synthetic wallet address', code: 'custom' }],
      },
    );
  }
  return email;
}

/**
 * Mails a link that adds `email` to a signed-in account (the caller passed
 * step-up). Says nothing about whether the address is taken: that is only
 * told to whoever follows the link, i.e. the address's owner.
 */
export async function requestEmailLink(deps: EmailAccountDeps, input: { userId: string; email: string }): Promise<void> {
  const mailer = requireMailer(deps.mailer);
  const email = deliverableEmail(deps.config, input.email);
  const token = newToken();
  await deps.store
    .insertInto('email_tokens')
    .values({
      token_hash: tokenHash(token),
      user_id: input.userId,
      purpose: LINK_EMAIL,
      created_at: nowIso(),
      expires_at: isoIn(EMAIL_TOKEN_TTL_MS),
      used_at: null,
      pending_email: email,
    })
    .execute();
  await mailer.send({
    to: email,
    subject: 'Confirm the address for your Flowgate account',
    text: [
      `Someone signed in at ${deps.config.baseUrl} asked to add this address to their account; it will then receive their confirmation codes.`,
      '',
      `Confirm: ${verificationLink(deps.config.baseUrl, token)}`,
      '',
      'The link works once and expires in 24 hours. It does not sign you in. If you did not ask for this, ignore this message.',
    ].join('\n'),
  });
}

/**
 * What the browser that signed up keeps of its link (a digest, not the link): following the link opens a session
 * only where it is presented (src/auth/session-cookie.ts). A known address gets one too, from a link never mailed,
 * so the two answers stay alike.
 */
export const emailSignUpBinding = (token: string) => tokenHash(`flowgate sign-up browser v1:${token}`);

export async function signUpWithEmail(deps: EmailAccountDeps, input: { email: string; password: string; name?: string }): Promise<{ binding: string }> {
  const mailer = requireMailer(deps.mailer);
  const email = deliverableEmail(deps.config, input.email);
  // Hashed on every path, so a known address costs the same time as a new one.
  const passwordHash = await hashPassword(input.password);
  const token = newToken();
  const known = await deps.store.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').select(['id', 'email_verified_at', 'provider_id']).where('email', '=', email).executeTakeFirst();
    if (user && (user.email_verified_at || user.provider_id !== 'email')) return true;
    const userId = user?.id ?? newId();
    if (!user) await trx.insertInto('users').values({ id: userId, email, provider_id: 'email', created_at: nowIso() }).execute();
    await trx
      .insertInto('email_tokens')
      .values({
        token_hash: tokenHash(token),
        user_id: userId,
        purpose: VERIFY_EMAIL,
        created_at: nowIso(),
        expires_at: isoIn(EMAIL_TOKEN_TTL_MS),
        used_at: null,
        pending_password_hash: passwordHash,
        pending_name: input.name?.trim() || null,
      })
      .execute();
    return false;
  });
  const base = deps.config.baseUrl;
  await mailer.send(
    known
      ? {
          to: email,
          subject: 'Sign-up attempt with your Flowgate address',
          text: [
            `Someone tried to sign up at ${base} with this address, which already has an account. Nothing on the account changed.`,
            '',
            `If it was you, sign in instead (POST ${base}/api/auth/sign-in/email with your e-mail and password, or with your wallet).`,
            'If it was not you, you can ignore this message.',
          ].join('\n'),
        }
      : {
          to: email,
          subject: 'Verify your e-mail address for Flowgate',
          text: [
            `Someone, hopefully you, signed up at ${base} with this address.`,
            '',
            `Verify it and sign in: ${verificationLink(base, token)}`,
            '',
            'The link works once and expires in 24 hours. If you did not sign up, ignore this message: no account opens until the link is followed.',
            'Opened in the browser you signed up in, the link also signs you in; elsewhere, sign in with your e-mail and password afterwards.',
          ].join('\n'),
        },
  );
  return { binding: emailSignUpBinding(token) };
}

/**
 * Follows a verification link: consumes it (and every other outstanding link
 * of the address), marks the address verified, sets the password of that
 * sign-up, and creates the organization on the first verification.
 */
export async function verifyEmailToken(deps: EmailAccountDeps, token: string): Promise<{ kind: 'sign_up' | 'link'; account: EmailAccount }> {
  return deps.store.transaction().execute(async (trx) => {
    const now = nowIso();
    const link = await trx
      .updateTable('email_tokens')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash(token))
      .where('purpose', 'in', [VERIFY_EMAIL, LINK_EMAIL])
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['user_id', 'purpose', 'pending_password_hash', 'pending_name', 'pending_email'])
      .executeTakeFirst();
    if (link?.purpose === LINK_EMAIL && link.pending_email) {
      return { kind: 'link' as const, account: await linkAddress(trx, deps.secrets, link.user_id, link.pending_email) };
    }
    const user = link && (await trx.selectFrom('users').select(['id', 'email']).where('id', '=', link.user_id).executeTakeFirst());
    if (!link || !user?.email) {
      throw new ServiceError(
        400,
        'email_token_invalid',
        'This verification link is unknown, expired or already used. If it was followed already (some mail filters open links), the address is verified: sign in with it and your password (POST /api/auth/sign-in/email); otherwise sign up again for a new link.',
      );
    }
    await trx
      .updateTable('email_tokens')
      .set({ used_at: now })
      .where('user_id', '=', user.id)
      .where('purpose', '=', VERIFY_EMAIL)
      .where('used_at', 'is', null)
      .execute();
    await trx
      .updateTable('users')
      .set({ email_verified_at: now, ...(link.pending_password_hash ? { password_hash: link.pending_password_hash } : {}) })
      .where('id', '=', user.id)
      .execute();
    const { organization, created } = await organizationOf(trx, deps.secrets, user.id, user.email, link.pending_name);
    return { kind: 'sign_up' as const, account: { userId: user.id, email: user.email, organization, created } };
  });
}

/** Gives the user this verified address; an unverified sign-up of it (no account yet) gives way, another account keeps it. */
async function linkAddress(trx: Store, box: SecretBox, userId: string, email: string): Promise<EmailAccount> {
  const holder = await trx.selectFrom('users').select(['id', 'email_verified_at', 'provider_id']).where('email', '=', email).executeTakeFirst();
  if (holder && holder.id !== userId) {
    const pending = !holder.email_verified_at && holder.provider_id === 'email' && !(await firstMembership(trx, holder.id));
    if (!pending) throw new ServiceError(409, 'conflict', 'This address already belongs to another account; it cannot be added to a second one.');
    await trx.deleteFrom('users').where('id', '=', holder.id).execute();
  }
  await trx
    .updateTable('email_tokens')
    .set({ used_at: nowIso() })
    .where('user_id', '=', userId)
    .where('purpose', '=', LINK_EMAIL)
    .where('used_at', 'is', null)
    .execute();
  await trx.updateTable('users').set({ email, email_verified_at: nowIso() }).where('id', '=', userId).execute();
  const { organization } = await organizationOf(trx, box, userId, email, null);
  return { userId, email, organization, created: false };
}

/** The account for an e-mail and password; one refusal for an unknown address, a wrong password and an unverified address. */
export async function authenticateWithPassword(deps: EmailAccountDeps, input: { email: string; password: string }): Promise<EmailAccount> {
  const email = normalizeEmail(input.email);
  const user = await deps.store.selectFrom('users').select(['id', 'email', 'password_hash', 'email_verified_at']).where('email', '=', email).executeTakeFirst();
  const usable = user?.password_hash && user.email_verified_at ? user.password_hash : undefined;
  const matches = await verifyPassword(usable ?? (await decoyPasswordHash()), input.password);
  if (!user || !usable || !matches) {
    throw new ServiceError(401, 'invalid_credentials', 'Wrong e-mail or password, or the address is not verified yet (follow the link mailed at sign-up).');
  }
  const { organization, created } = await deps.store.transaction().execute((trx) => organizationOf(trx, deps.secrets, user.id, email, null));
  return { userId: user.id, email, organization, created };
}

/** The user's first organization, or a new one they own (first verification, or every membership removed since). */
async function organizationOf(trx: Store, box: SecretBox, userId: string, email: string, name: string | null) {
  const membership = await firstMembership(trx, userId);
  if (membership) {
    return { organization: { id: membership.id, slug: membership.slug, name: membership.name, role: membership.role as Role }, created: false };
  }
  const local =
    email
      .split('@')[0]!
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 24) || 'user';
  const slug = `${local}-${
    newToken(6)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(0, 6) || 'org'
  }`;
  const organization = await createOrganizationWithOwner(trx, box, {
    slug,
    name: `${name ?? email}'s organization`.slice(0, 120),
    user: { id: userId, provider_id: 'email', created_at: nowIso(), existing: true },
  });
  return { organization: { ...organization, role: 'owner' as Role }, created: true };
}
