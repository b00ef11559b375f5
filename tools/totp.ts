import { z } from 'zod';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { requireStepUp, spendTotpStep, STEP_UP_PROOF_FIELDS, stepUpProofFields, totpStep } from '../src/auth/step-up.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { ServiceError } from '../src/errors.ts';
import { nowIso } from '../src/ids.ts';
import type { ToolContext } from './define.ts';

/** An authenticator app (TOTP) as a further step-up factor: enrol, confirm, remove (session only). */

const TOTP_ISSUER = 'Flowgate';

async function totpState(ctx: ToolContext, userId: string) {
  const user = await ctx.services.store
    .selectFrom('users')
    .select(['id', 'email', 'wallet_address', 'totp_secret_encrypted', 'totp_enabled_at'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!user) throw new ServiceError(401, 'session_required', 'This session has ended; sign in again.');
  return user;
}

export const enrolTotp = defineTool({
  name: 'enrol_totp',
  title: 'Enrol an authenticator app',
  description:
    'Starts TOTP enrolment: returns a new secret and its otpauth:// URI (show it as a QR code). Nothing changes for step-up until POST /api/user/totp/confirm with a current code. Refused while an authenticator is active (remove it first).',
  scope: 'session',
  input: z.object({}),
  output: z.object({ secret: z.string().describe('Base32 TOTP secret; shown only now'), otpauthUri: z.string(), confirmed: z.literal(false) }),
  rest: { method: 'POST', path: '/api/user/totp' },
  mcp: false,
  async handler(_input, ctx) {
    const principal = requirePrincipal(ctx);
    const { store, secrets } = ctx.services;
    const user = await totpState(ctx, principal.userId);
    if (user.totp_enabled_at) {
      throw new ServiceError(409, 'conflict', 'An authenticator is already active; remove it first (DELETE /api/user/totp, behind step-up).');
    }
    // Loaded at the first enrolment rather than at start (src/auth/step-up.ts does the same for codes).
    const { generateSecret, generateURI } = await import('otplib');
    const secret = generateSecret();
    // Pending until confirmed: a replaced pending secret only discards an unfinished enrolment.
    await store
      .updateTable('users')
      .set({ totp_secret_encrypted: secrets.seal(secret, user.id), totp_enabled_at: null, totp_last_step: null })
      .where('id', '=', user.id)
      .execute();
    const label = user.email ?? user.wallet_address ?? user.id;
    return { secret, otpauthUri: generateURI({ issuer: TOTP_ISSUER, label, secret }), confirmed: false as const };
  },
});

export const confirmTotp = defineTool({
  name: 'confirm_totp',
  title: 'Confirm authenticator enrolment',
  description:
    'Finishes TOTP enrolment with a current 6-digit code, behind step-up (action totp_enrol: the first call answers 401 signature_required; repeat with `signature` and a current `code`). From then on step-up also asks for `code`.',
  scope: 'session',
  // `code` is the new authenticator's code; the step-up proof adds `signature` (and `emailOtp` when enrolled).
  input: z.object({ ...stepUpProofFields, code: z.string().trim().min(1).max(16).describe('The current 6-digit code of the authenticator app') }),
  output: z.object({ enabled: z.literal(true), enabledAt: z.string() }),
  rest: { method: 'POST', path: '/api/user/totp/confirm' },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { store, secrets } = ctx.services;
    const user = await totpState(ctx, principal.userId);
    if (user.totp_enabled_at) throw new ServiceError(409, 'conflict', 'The authenticator is already active.');
    if (!user.totp_secret_encrypted) throw new ServiceError(404, 'not_found', 'No enrolment is pending; start one with POST /api/user/totp.');
    const secret = secrets.open(user.totp_secret_encrypted, user.id);
    const wrongCode = () =>
      new ServiceError(400, 'invalid_input', 'That code does not match the enrolled secret; check the clock of the device and send the current code.', {
        issues: [{ path: 'code', message: 'wrong or expired TOTP code' }],
      });
    // A wrong code is refused before the step-up, so it does not spend a signed challenge.
    const step = await totpStep(secret, input.code);
    if (step === null) throw wrongCode();
    // A factor that step-up will ask for from now on: a stolen session alone must not enrol its own, which would
    // lock the owner out of every step-up action (removing it needs its code).
    await requireStepUp(ctx.services, principal, 'totp_enrol', input, ctx.ip);
    // The confirming code is spent: it cannot also answer the next step-up.
    if (!(await spendTotpStep(store, user.id, step))) throw wrongCode();
    const enabledAt = nowIso();
    await store.updateTable('users').set({ totp_enabled_at: enabledAt }).where('id', '=', user.id).execute();
    await recordAudit(store, { organizationId: principal.organizationId, actor: principal, action: 'totp_enrolled', target: user.id, ip: ctx.ip });
    return { enabled: true as const, enabledAt };
  },
});

export const removeTotp = defineTool({
  name: 'remove_totp',
  title: 'Remove the authenticator',
  description:
    'Removes the TOTP factor. Behind step-up (action totp_remove): the first call answers 401 signature_required with a challenge; repeat with `signature` and the current `code`.',
  scope: 'session',
  input: z.object(stepUpProofFields),
  output: z.object({ removed: z.literal(true) }),
  rest: { method: 'DELETE', path: '/api/user/totp', body: STEP_UP_PROOF_FIELDS },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { store } = ctx.services;
    const user = await totpState(ctx, principal.userId);
    if (!user.totp_secret_encrypted) throw new ServiceError(404, 'not_found', 'No authenticator is enrolled.');
    // A pending (unconfirmed) enrolment protects nothing yet: dropping it needs no step-up.
    if (user.totp_enabled_at) await requireStepUp(ctx.services, principal, 'totp_remove', input, ctx.ip);
    await store.updateTable('users').set({ totp_secret_encrypted: null, totp_enabled_at: null, totp_last_step: null }).where('id', '=', user.id).execute();
    if (user.totp_enabled_at) {
      await recordAudit(store, { organizationId: principal.organizationId, actor: principal, action: 'totp_removed', target: user.id, ip: ctx.ip });
    }
    return { removed: true as const };
  },
});

export const totpTools = [enrolTotp, confirmTotp, removeTotp];
