import { z } from 'zod';
import { isAddress } from 'viem';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { rateLimitedError } from '../src/guards/rate-limit.ts';
import { issueSiweNonce, verifySiweSignIn } from '../src/auth/siwe.ts';
import { clearedSessionCookie } from '../src/auth/session-cookie.ts';
import { startSession } from './session-start.ts';
import { findOrCreateWalletAccount } from '../src/org/accounts.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { isServiceError, ServiceError } from '../src/errors.ts';
import type { RateLimitName } from '../src/config.ts';
import type { ToolContext } from './define.ts';
import { ROLES } from '../src/auth/principal.ts';

/** Wallet sign-in (EIP-4361) and the browser session it opens (SPEC Account endpoints, Authentication rules 6-7). */

const walletAddress = z
  .string()
  .trim()
  .refine((v) => isAddress(v, { strict: false }), 'expected a 0x-prefixed 20-byte EVM address')
  .describe('The EVM address that signs the message');
const chainId = z.coerce.number().int().positive().describe('The chain id of the sign-in assertion (does not restrict execution chains)');

export async function spendPerIp(ctx: ToolContext, name: RateLimitName, advice = 'sign-in attempts are limited per IP address') {
  const decision = await ctx.services.rateLimiter.consume(name, ctx.ip);
  if (!decision.allowed) throw rateLimitedError(name, decision, advice);
}

export const organizationView = z.object({ id: z.string(), slug: z.string(), name: z.string(), role: z.enum(ROLES) });

export const siweNonce = defineTool({
  name: 'siwe_nonce',
  title: 'Wallet sign-in: get a nonce',
  description:
    'Step 1 of Sign-In with Ethereum: a single-use nonce for walletAddress and chainId, valid 5 minutes. Put it in an EIP-4361 message (domain = host of the gateway URL, URI = gateway URL, Version 1), sign it, then POST /api/auth/siwe/verify.',
  scope: 'public',
  input: z.object({ walletAddress, chainId }),
  output: z.object({ nonce: z.string() }),
  rest: { method: 'POST', path: '/api/auth/siwe/nonce' },
  mcp: false,
  async handler(input, ctx) {
    await spendPerIp(ctx, 'siweNoncePerIp');
    return { nonce: await issueSiweNonce(ctx.services.store, input) };
  },
});

export const siweVerify = defineTool({
  name: 'siwe_verify',
  title: 'Wallet sign-in: verify',
  description:
    'Step 2 of Sign-In with Ethereum: checks the signed message (domain, URI, nonce, expiry, chain, signer; contract wallets through EIP-1271) and sets the session cookie. The first sign-in of a wallet creates its user, an organization it owns and that organization wallet.',
  scope: 'public',
  input: z.object({
    message: z.string().min(1).max(4096).describe('The EIP-4361 message exactly as signed'),
    signature: z
      .string()
      .regex(/^0x[0-9a-fA-F]*$/, 'expected a 0x-prefixed hex signature')
      .max(20_000)
      .describe('personal_sign (EIP-191) signature of message'),
    walletAddress,
    chainId,
  }),
  output: z.object({
    user: z.object({ id: z.string(), walletAddress: z.string() }),
    organization: organizationView,
    session: z.object({ id: z.string(), expiresAt: z.string() }),
    created: z.boolean().describe('true when this sign-in created the account'),
  }),
  rest: { method: 'POST', path: '/api/auth/siwe/verify' },
  mcp: false,
  async handler(input, ctx) {
    await spendPerIp(ctx, 'siweVerifyPerIp');
    const { services } = ctx;
    let address: `0x${string}`;
    try {
      address = await verifySiweSignIn(
        { store: services.store, chainClients: services.chainClients, baseUrl: services.config.baseUrl },
        { ...input, signature: input.signature as `0x${string}` },
      );
    } catch (error) {
      if (isServiceError(error)) {
        await recordAudit(services.store, {
          organizationId: null,
          actor: null,
          action: 'sign_in_failed',
          target: input.walletAddress,
          outcome: 'failure',
          ip: ctx.ip,
          details: { reason: error.message },
        });
      }
      throw error;
    }
    const account = await findOrCreateWalletAccount(services.store, services.secrets, { address, emailDomain: services.config.walletEmailDomain });
    const session = await startSession(ctx, {
      userId: account.userId,
      organizationId: account.organization.id,
      created: account.created,
      target: address,
      details: { method: 'siwe', chainId: input.chainId },
    });
    const { organization } = account;
    return {
      user: { id: account.userId, walletAddress: address },
      organization: { id: organization.id, slug: organization.slug, name: organization.name, role: organization.role },
      session,
      created: account.created,
    };
  },
});

export const signOut = defineTool({
  name: 'sign_out',
  title: 'Sign out',
  description: 'Ends the current browser session and clears its cookie.',
  scope: 'session',
  input: z.object({}),
  output: z.object({ signedOut: z.literal(true) }),
  rest: { method: 'POST', path: '/api/auth/sign-out' },
  mcp: false,
  async handler(_input, ctx) {
    const principal = requirePrincipal(ctx);
    await ctx.services.sessions.revoke(principal.userId, principal.keyId);
    await recordAudit(ctx.services.store, { organizationId: principal.organizationId, actor: principal, action: 'sign_out', ip: ctx.ip });
    ctx.setHeader('Set-Cookie', clearedSessionCookie(ctx.services.config.baseUrl));
    return { signedOut: true as const };
  },
});

export const getSession = defineTool({
  name: 'get_session',
  title: 'Describe the session',
  description: 'The signed-in user, the active organization with the role in it, every organization the user belongs to, and the session expiry.',
  scope: 'session',
  input: z.object({}),
  output: z.object({
    session: z.object({ id: z.string(), createdAt: z.string(), expiresAt: z.string() }),
    user: z.object({ id: z.string(), email: z.string().nullable(), walletAddress: z.string().nullable() }),
    organization: organizationView,
    organizations: z.array(organizationView),
  }),
  rest: { method: 'GET', path: '/api/auth/session' },
  mcp: false,
  async handler(_input, ctx) {
    const principal = requirePrincipal(ctx);
    const { store, sessions } = ctx.services;
    const [session, user, memberships] = await Promise.all([
      sessions.get(principal.keyId),
      store.selectFrom('users').select(['id', 'email', 'wallet_address']).where('id', '=', principal.userId).executeTakeFirst(),
      store
        .selectFrom('memberships')
        .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
        .select(['organizations.id', 'organizations.slug', 'organizations.name', 'memberships.role'])
        .where('memberships.user_id', '=', principal.userId)
        .orderBy('memberships.created_at')
        .execute(),
    ]);
    const active = memberships.find((m) => m.id === principal.organizationId);
    if (!session || !user || !active) throw new ServiceError(401, 'session_required', 'This session has ended; sign in again.');
    return {
      session: { id: session.id, createdAt: session.createdAt, expiresAt: session.expiresAt },
      user: { id: user.id, email: user.email, walletAddress: user.wallet_address },
      organization: active,
      organizations: memberships,
    };
  },
});

export const authTools = [siweNonce, siweVerify, signOut, getSession];
