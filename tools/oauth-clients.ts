import { z } from 'zod';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { booleanish } from './inputs.ts';
import { roleOf } from '../src/org/roles.ts';
import { findGrant, listGrants, revokeGrant, type ConnectedClient } from '../src/auth/oauth/grants.ts';
import { OAUTH_SCOPES } from '../src/auth/oauth/scopes.ts';
import { ServiceError } from '../src/errors.ts';
import type { Principal } from './define.ts';
import type { Services } from '../src/services.ts';

/**
 * Connected OAuth clients (grants): a user lists and revokes their own; an
 * admin or owner those of the whole organization. Revocation ends every
 * token of the grant at once and is audited.
 */

const clientView = z.object({
  id: z.string(),
  clientId: z.string(),
  clientName: z.string().nullable(),
  userId: z.string(),
  scope: z.enum(OAUTH_SCOPES),
  resource: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});

const view = (c: ConnectedClient) => ({
  id: c.id,
  clientId: c.clientId,
  clientName: c.clientName,
  userId: c.userId,
  scope: c.scope,
  resource: c.resource,
  createdAt: c.createdAt,
  lastUsedAt: c.lastUsedAt,
  revokedAt: c.revokedAt,
});

/**
 * Admins and owners see (and revoke) the organization's grants, through a credential that may administer: a session,
 * or a key or token with `mcp:admin`. Anyone else, an admin's `mcp:read` or `mcp:write` key included, only their own:
 * a leaked agent key must not disconnect every member's clients.
 */
async function visibleTo(services: Services, principal: Principal): Promise<string | undefined> {
  if (principal.scope !== null && principal.scope !== 'mcp:admin') return principal.userId;
  const role = await roleOf(services.store, principal.organizationId, principal.userId);
  return role === 'admin' || role === 'owner' ? undefined : principal.userId;
}

export const listOAuthClients = defineTool({
  name: 'list_oauth_clients',
  title: 'List OAuth clients',
  description: 'Connected OAuth clients: yours, or all with mcp:admin.',
  scope: 'mcp:read',
  input: z.object({ includeRevoked: booleanish.optional() }),
  output: z.array(clientView),
  rest: { method: 'GET', path: '/api/oauth/clients' },
  mcp: { annotations: READ_ONLY_LOCAL, resultKey: 'clients' },
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const userId = await visibleTo(ctx.services, principal);
    return (await listGrants(ctx.services.store, principal.organizationId, { userId, includeRevoked: input.includeRevoked })).map(view);
  },
});

export const revokeOAuthClient = defineTool({
  name: 'revoke_oauth_client',
  title: 'Revoke OAuth client',
  description: 'Revokes an OAuth grant and all its tokens at once.',
  scope: 'mcp:write',
  input: z.object({ grantId: z.string().min(1).max(100) }),
  output: z.object({ id: z.string(), revokedAt: z.string() }),
  rest: { method: 'DELETE', path: '/api/oauth/clients/:grantId' },
  mcp: { annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false } },
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { store } = ctx.services;
    const userId = await visibleTo(ctx.services, principal);
    const grant = await findGrant(store, principal.organizationId, input.grantId);
    if (!grant || (userId !== undefined && grant.userId !== userId)) {
      throw new ServiceError(404, 'not_found', `No connected client ${JSON.stringify(input.grantId)} of yours; GET /api/oauth/clients lists them.`, {
        grantId: input.grantId,
      });
    }
    if (!grant.revokedAt) await revokeGrant(store, grant.id, 'user', { actor: principal, ip: ctx.ip });
    const revoked = await findGrant(store, principal.organizationId, grant.id);
    return { id: grant.id, revokedAt: revoked!.revokedAt! };
  },
});

export const oauthClientTools = [listOAuthClients, revokeOAuthClient];
