import { createHash } from 'node:crypto';
import { sharedNow } from '../store/clock.ts';
import { z } from 'zod';
import { getAddress, recoverMessageAddress, type Hex } from 'viem';
import type { Services } from '../services.ts';
import type { Principal } from './principal.ts';
import type { StepUpChallengesTable, UsersTable } from '../store/schema.ts';
import { ServiceError } from '../errors.ts';
import { rateLimitedError } from '../guards/rate-limit.ts';
import { recordAudit } from '../org/audit-log.ts';
import { nowIso } from '../ids.ts';
import { isoIn, newToken, tokenHash } from './tokens.ts';
import { emailOtpFactor } from './email-otp.ts';
import { canonicalJson } from '../text/request-hash.ts';

/**
 * Step-up (SPEC Authentication rule 8): a sensitive operation proves, on top
 * of the session, that the user holds their primary wallet (a personal_sign of
 * a one-time challenge) plus every further factor they enrolled (TOTP code,
 * e-mail code). Callers check the role first (403 before any challenge).
 */

export const STEP_UP_ACTIONS = [
  'org_api_key_manage',
  'session_revoke',
  'totp_enrol',
  'totp_remove',
  'wallet_export',
  'wallet_withdraw',
  'audit_export',
  'spend_cap_change',
  'email_change',
] as const;
export type StepUpAction = (typeof STEP_UP_ACTIONS)[number];

export const STEP_UP_CHALLENGE_TTL_MS = 5 * 60_000;

/**
 * The fields a gated operation adds to its input (body): `signature`, `code`
 * (TOTP), `emailOtp` (the e-mailed code). Described by the operation, not per
 * field: they sit in every gated MCP tool of the tools/list budget.
 */
export const stepUpProofFields = {
  signature: z
    .string()
    .max(20_000)
    .refine((v) => /^0x[0-9a-fA-F]+$/.test(v), 'expected a 0x-prefixed hex signature')
    .optional(),
  // Codes are checked against their factor, so a malformed one is simply a wrong one.
  code: z.string().trim().min(1).max(16).optional(),
  emailOtp: z.string().trim().min(1).max(16).optional(),
};

/** Their names: a DELETE route lists them as its body fields (`rest.body`). */
export const STEP_UP_PROOF_FIELDS = ['signature', 'code', 'emailOtp'] as const;

export interface StepUpProof {
  signature?: string;
  code?: string;
  emailOtp?: string;
}

export type StepUpServices = Pick<Services, 'store' | 'secrets' | 'rateLimiter' | 'chainClients' | 'config'>;
type StepUpUser = Pick<UsersTable, 'id' | 'email' | 'wallet_address' | 'totp_secret_encrypted' | 'totp_enabled_at' | 'totp_last_step' | 'email_verified_at'>;
type ChallengeRow = StepUpChallengesTable;

/**
 * A factor besides the wallet. EXTENSION POINT: the e-mail factor is one more
 * entry in EXTRA_FACTORS (proofField 'emailOtp'): `issue` mails a code when a
 * challenge is minted and returns its hash for the challenge row
 * (`email_code_hash`); `check` compares the retry's `emailOtp` to it.
 */
export interface StepUpFactor {
  /** The name listed in `required`. */
  name: string;
  proofField: Exclude<keyof StepUpProof, 'signature'>;
  enrolled(user: StepUpUser, services: StepUpServices): boolean;
  issue?(services: StepUpServices, user: StepUpUser, challenge: { id: string; action: StepUpAction }): Promise<{ emailCodeHash?: string } | void>;
  check(services: StepUpServices, user: StepUpUser, value: string, challenge: ChallengeRow): Promise<boolean>;
}

/**
 * TOTP (RFC 6238, 30 s steps, ±1 step of clock drift): the time step the
 * code belongs to, or null. Codes of `afterStep` or earlier are refused.
 */
export async function totpStep(secret: string, code: string, afterStep?: number | null): Promise<number | null> {
  // otplib loads at the first TOTP code (its set-up is 10 ms of a cold start). Outside the try: a library that
  // cannot load is an error of the gateway's, not a wrong code.
  const { verify: verifyTotp } = await import('otplib');
  try {
    const result = await verifyTotp({ secret, token: code, epochTolerance: 30, ...(afterStep != null ? { afterTimeStep: afterStep } : {}) });
    return result.valid && 'timeStep' in result ? result.timeStep : null;
  } catch {
    return null;
  }
}

/** Spends the code's time step: true for the one request that moved the user's last step forward. */
export async function spendTotpStep(store: Services['store'], userId: string, step: number): Promise<boolean> {
  const result = await store
    .updateTable('users')
    .set({ totp_last_step: step })
    .where('id', '=', userId)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

const totpFactor: StepUpFactor = {
  name: 'totp',
  proofField: 'code',
  enrolled: (user) => user.totp_enabled_at !== null && user.totp_secret_encrypted !== null,
  async check(services, user, value) {
    const step = await totpStep(services.secrets.open(user.totp_secret_encrypted!, user.id), value, user.totp_last_step);
    // A code is good once: a replay of it (or of an older one) is a wrong code.
    return step !== null && (await spendTotpStep(services.store, user.id, step));
  },
};

export const EXTRA_FACTORS: StepUpFactor[] = [totpFactor, emailOtpFactor];

/**
 * Whose step-up it is: the user's sessions share one challenge and retry budget per action (SPEC Authentication rule
 * 8), and each API key or OAuth token has its own. Shared, a leaked key's unsigned attempts spent the budget and
 * superseded the challenge of the owner's session, which then could not revoke that key.
 */
const credentialOf = (principal: Principal) => (principal.kind === 'session' ? 'session' : `${principal.kind}:${principal.keyId}`);
const budgetKey = (principal: Principal, action: StepUpAction) => `${principal.userId}:${action}:${credentialOf(principal)}`;

/** How much of the request the wallet shows; its hash binds the rest. */
const REQUEST_SHOWN_CHARS = 400;

/**
 * What a step-up signature authorizes: the gated operation's input without
 * its proof (canonical JSON), so a signature answers only the request its
 * challenge was minted for. Without it, a signature obtained for "revoke key A"
 * or "withdraw 0.01 to A" was as good for "create a key" or "withdraw all to B"
 * (one action name covers both), and the wallet showed only the action's name.
 */
function requestOf(input: StepUpProof): string {
  const rest: Record<string, unknown> = { ...input };
  for (const field of STEP_UP_PROOF_FIELDS) delete rest[field];
  return canonicalJson(rest);
}

/**
 * The challenge text. Its nonce is the challenge row's id (128 random bits):
 * it must be rebuilt to check a signature, and it is no secret (the
 * signature is the proof). The row keeps the SHA-256 of the whole text.
 */
function challengeText(a: {
  id: string;
  action: StepUpAction;
  user: StepUpUser;
  organization: { id: string; name: string };
  request: string;
  issuedAt: string;
  expiresAt: string;
}) {
  const shown = a.request.length > REQUEST_SHOWN_CHARS ? `${a.request.slice(0, REQUEST_SHOWN_CHARS)}… (cut; the hash below covers all of it)` : a.request;
  return [
    'Flowgate step-up confirmation',
    '',
    'Sign this message only if you started this action yourself.',
    `Action: ${a.action}`,
    `Request: ${shown}`,
    `Request SHA-256: ${createHash('sha256').update(a.request).digest('hex')}`,
    `User: ${a.user.wallet_address ?? a.user.id} (${a.user.id})`,
    `Organization: ${a.organization.name} (${a.organization.id})`,
    `Nonce: ${a.id}`,
    `Issued At: ${a.issuedAt}`,
    `Expiration Time: ${a.expiresAt}`,
  ].join('\n');
}

async function organizationOf(services: StepUpServices, organizationId: string) {
  const org = await services.store.selectFrom('organizations').select(['id', 'name']).where('id', '=', organizationId).executeTakeFirst();
  return org ?? { id: organizationId, name: '' };
}

async function mintChallenge(services: StepUpServices, principal: Principal, user: StepUpUser, action: StepUpAction, request: string) {
  const { store } = services;
  const now = sharedNow();
  const id = newToken(16);
  const issuedAt = new Date(now).toISOString();
  const expiresAt = isoIn(STEP_UP_CHALLENGE_TTL_MS, now);
  const text = challengeText({ id, action, user, organization: await organizationOf(services, principal.organizationId), request, issuedAt, expiresAt });
  // Expired rows have no use left (a used one is never matched again either way).
  await store.deleteFrom('step_up_challenges').where('user_id', '=', user.id).where('expires_at', '<', issuedAt).execute();
  // One live challenge per credential and action: a new one supersedes the last.
  await store
    .updateTable('step_up_challenges')
    .set({ used_at: issuedAt })
    .where('user_id', '=', user.id)
    .where('action', '=', action)
    .where('credential_id', '=', credentialOf(principal))
    .where('used_at', 'is', null)
    .execute();
  let emailCodeHash: string | null = null;
  for (const factor of EXTRA_FACTORS) {
    if (factor.enrolled(user, services) && factor.issue) emailCodeHash = (await factor.issue(services, user, { id, action }))?.emailCodeHash ?? emailCodeHash;
  }
  await store
    .insertInto('step_up_challenges')
    .values({
      id,
      challenge_hash: tokenHash(text),
      user_id: user.id,
      action,
      email_code_hash: emailCodeHash,
      created_at: issuedAt,
      expires_at: expiresAt,
      used_at: null,
      credential_id: credentialOf(principal),
    })
    .execute();
  return text;
}

/**
 * personal_sign of `message` by `wallet`: an EOA's signature recovers to it;
 * a contract wallet (EIP-1271, as wallet sign-in accepts) is asked on the
 * chain of its latest wallet sign-in, through viem.
 */
async function signedByPrimaryWallet(services: StepUpServices, wallet: `0x${string}`, message: string, signature: Hex): Promise<boolean> {
  try {
    if (getAddress(await recoverMessageAddress({ message, signature })) === wallet) return true;
  } catch {
    // Not a 65-byte ECDSA signature: perhaps a contract wallet's.
  }
  const lastSignIn = await services.store
    .selectFrom('siwe_nonces')
    .select('chain_id')
    .where('wallet_address', '=', wallet)
    .where('used_at', 'is not', null)
    .orderBy('used_at', 'desc')
    .executeTakeFirst();
  if (!lastSignIn) return false;
  try {
    const client = services.chainClients.publicClient(lastSignIn.chain_id);
    if (!(await client.getCode({ address: wallet }))) return false; // an EOA: recovery above was the whole check
    return await client.verifyMessage({ address: wallet, message, signature });
  } catch {
    return false; // a chain this gateway cannot reach: only plain wallet signatures can be checked
  }
}

const requiredFactors = (user: StepUpUser, services: StepUpServices) => [
  'wallet',
  ...EXTRA_FACTORS.filter((f) => f.enrolled(user, services)).map((f) => f.name),
];

/**
 * Throws 401 signature_required / factors_required / wallet_signature_invalid,
 * 403 step_up_wallet_required (no linked wallet) or 429 rate_limited; returns
 * when the proof is complete. Records step_up_succeeded / step_up_failed.
 */
export async function requireStepUp(services: StepUpServices, principal: Principal, action: StepUpAction, proof: StepUpProof, ip: string): Promise<void> {
  const { store, rateLimiter } = services;
  const key = budgetKey(principal, action);
  const audit = (outcome: 'success' | 'failure', reason?: string) =>
    recordAudit(store, {
      organizationId: principal.organizationId,
      actor: principal,
      action: outcome === 'success' ? 'step_up_succeeded' : 'step_up_failed',
      target: action,
      outcome,
      ip,
      details: reason ? { reason } : undefined,
    });

  const decision = await rateLimiter.consume('stepUpPerUserAction', key);
  if (!decision.allowed) {
    // Someone is guessing, or a client loops: recorded once per window, so the refusals cannot flood the log.
    if (decision.firstRefusal) await audit('failure', `rate_limited: over ${decision.limit} requests in the window; refused for ${decision.resetSeconds} s`);
    throw rateLimitedError('stepUpPerUserAction', decision, 'step-up attempts are limited per user and action (each API key apart)');
  }

  const user = await store
    .selectFrom('users')
    .select(['id', 'email', 'wallet_address', 'totp_secret_encrypted', 'totp_enabled_at', 'totp_last_step', 'email_verified_at'])
    .where('id', '=', principal.userId)
    .executeTakeFirst();
  if (!user) throw new ServiceError(401, 'session_required', 'This session has ended; sign in again.');
  if (!user.wallet_address) {
    throw new ServiceError(
      403,
      'step_up_wallet_required',
      'This action needs a signature from your primary wallet, and your account has no linked wallet (the local owner created at first start has none). Sign in with a wallet (POST /api/auth/siwe/verify) as an admin or owner of this organization, or use the `flowgate` CLI on the host.',
      { action },
    );
  }
  const required = requiredFactors(user, services);
  const request = requestOf(proof);

  if (!proof.signature) {
    const challenge = await mintChallenge(services, principal, user, action, request);
    throw new ServiceError(
      401,
      'signature_required',
      `Step-up required for ${action}: sign \`challenge\` verbatim with personal_sign (EIP-191) from ${user.wallet_address} and repeat the request with \`signature\`${required.length > 1 ? ' and the other `required` factors (`code` for totp, `emailOtp` for emailOtp)' : ''} in the body. The challenge is single-use and expires in 5 minutes.`,
      { challenge, required },
    );
  }

  // The latest live challenge of this credential and action is the only one a signature can answer.
  const now = nowIso();
  const row = await store
    .selectFrom('step_up_challenges')
    .selectAll()
    .where('user_id', '=', user.id)
    .where('action', '=', action)
    .where('credential_id', '=', credentialOf(principal))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  const invalid = async (reason: string) => {
    await audit('failure', reason);
    return new ServiceError(401, 'wallet_signature_invalid', `Step-up refused: ${reason}. Repeat the request without \`signature\` for a new challenge.`);
  };
  if (!row) throw await invalid('no live challenge (it was already used, superseded or expired after 5 minutes)');
  // Single use: whatever the outcome, this challenge has had its answer (the conditional update wins a race once).
  const consumed = await store.updateTable('step_up_challenges').set({ used_at: now }).where('id', '=', row.id).where('used_at', 'is', null).executeTakeFirst();
  if (Number(consumed.numUpdatedRows) !== 1) throw await invalid('the challenge was already used');
  const text = challengeText({
    id: row.id,
    action,
    user,
    organization: await organizationOf(services, principal.organizationId),
    request,
    issuedAt: row.created_at,
    expiresAt: row.expires_at,
  });
  if (tokenHash(text) !== row.challenge_hash) {
    throw await invalid(
      'the challenge was issued for a different request (repeat the first request exactly, adding only `signature` and the other factors) or for an account or organization that has since changed',
    );
  }
  if (!(await signedByPrimaryWallet(services, getAddress(user.wallet_address), text, proof.signature as Hex))) {
    throw await invalid(`the signature is not a personal_sign of the challenge by your primary wallet ${user.wallet_address}`);
  }

  const missing: string[] = [];
  for (const factor of EXTRA_FACTORS) {
    if (!factor.enrolled(user, services)) continue;
    const value = proof[factor.proofField];
    if (!value || !(await factor.check(services, user, value, row))) missing.push(factor.name);
  }
  if (missing.length > 0) {
    await audit('failure', `factors missing or wrong: ${missing.join(', ')}`);
    const challenge = await mintChallenge(services, principal, user, action, request);
    throw new ServiceError(
      401,
      'factors_required',
      `Wallet signature accepted, but ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing or wrong. Sign the new \`challenge\` and repeat the request with \`signature\`, \`code\` (totp) and \`emailOtp\` as \`required\` lists.`,
      { challenge, required, missing },
    );
  }

  await rateLimiter.reset('stepUpPerUserAction', key);
  await audit('success');
}
