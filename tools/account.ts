import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { ACCESS_TOKEN_PREFIX, findGrant } from '../src/auth/oauth/grants.ts';

/** The caller's own identity: key probe, user and organization wallet. */

export const checkApiKey = defineTool({
  name: 'check_api_key',
  title: 'Check API key',
  description: 'Auth probe: answers 200 with the organization and key details when the bearer key is valid and organization-scoped, 401 otherwise.',
  scope: 'mcp:read',
  input: z.object({}),
  output: z.object({
    valid: z.literal(true),
    organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
    key: z.object({
      id: z.string(),
      name: z.string(),
      prefix: z.string(),
      scope: z.string().nullable(),
      createdAt: z.string(),
      // Only for an OAuth access token: id, name and createdAt are then its grant's (the connected client).
      kind: z.literal('oauth_token').optional(),
    }),
  }),
  rest: { method: 'GET', path: '/api/keys' },
  mcp: false,
  async handler(_input, { principal, services }) {
    const caller = requirePrincipal({ principal });
    const organization = await services.organizations.get(caller.organizationId);
    // An OAuth token's keyId is its grant: it is no API key, but as valid a credential (the stdio bridge probes here).
    if (caller.kind === 'oauth_token') {
      const grant = await findGrant(services.store, caller.organizationId, caller.keyId);
      if (!organization || !grant) throw new ServiceError(401, 'unauthorized', 'This token is no longer valid');
      return {
        valid: true as const,
        organization: { id: organization.id, slug: organization.slug, name: organization.name },
        key: {
          id: grant.id,
          name: grant.clientName ?? grant.clientId,
          prefix: ACCESS_TOKEN_PREFIX,
          scope: caller.scope ?? null,
          createdAt: grant.createdAt,
          kind: 'oauth_token' as const,
        },
      };
    }
    const key = (await services.keys.list(caller.organizationId)).find((k) => k.id === caller.keyId);
    if (!organization || !key) throw new ServiceError(401, 'unauthorized', 'This key is no longer valid');
    return {
      valid: true as const,
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      key: { id: key.id, name: key.name, prefix: key.prefix, scope: key.scope, createdAt: key.createdAt },
    };
  },
});

export const getUser = defineTool({
  name: 'get_user',
  title: 'Get user',
  description: "The user behind the caller's key, with the active organization's EVM wallet address.",
  scope: 'mcp:read',
  input: z.object({}),
  output: z.object({ id: z.string(), email: z.string().nullable(), providerId: z.string(), walletAddress: z.string().nullable() }),
  rest: { method: 'GET', path: '/api/user' },
  mcp: false,
  async handler(_input, { principal, services }) {
    const caller = requirePrincipal({ principal });
    const user = await services.organizations.getUser(caller.userId);
    if (!user) throw new ServiceError(404, 'not_found', 'User not found');
    const wallet = await services.organizations.wallet(caller.organizationId);
    return { id: user.id, email: user.email, providerId: user.providerId, walletAddress: wallet?.walletAddress ?? null };
  },
});

export const getWallet = defineTool({
  name: 'get_wallet',
  title: 'Get organization wallet',
  description: "The organization's signing wallet (walletAddress on EVM, solanaAddress). Fund walletAddress before transfers or contract writes.",
  scope: 'mcp:read',
  input: z.object({}),
  output: z.object({ walletAddress: z.string().nullable(), solanaAddress: z.string().nullable() }),
  rest: { method: 'GET', path: '/api/user/wallet' },
  mcp: { annotations: READ_ONLY_LOCAL },
  async handler(_input, { principal, services }) {
    const wallet = await services.organizations.wallet(requirePrincipal({ principal }).organizationId);
    return { walletAddress: wallet?.walletAddress ?? null, solanaAddress: wallet?.solanaAddress ?? null };
  },
});

export const accountTools = [checkApiKey, getUser, getWallet];
