import { z } from 'zod';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { requireRole } from '../src/org/roles.ts';
import { requireStepUp, STEP_UP_PROOF_FIELDS, stepUpProofFields } from '../src/auth/step-up.ts';
import { KEY_SCOPES, type ApiKeyRecord } from '../src/auth/keys.ts';
import { assertRoom } from '../src/org/quotas.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { ServiceError } from '../src/errors.ts';

/**
 * Organization key lifecycle (SPEC Account endpoints, Authentication rules
 * 8-9): admins and owners create (session only), list and revoke `svc_` keys;
 * create and revoke sit behind step-up `org_api_key_manage`, checked after the role.
 */

const keyView = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string().describe('The first characters of the key, for recognising it'),
  scope: z.enum(KEY_SCOPES).nullable().describe('null: unrestricted'),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});

const view = (k: ApiKeyRecord) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  scope: k.scope,
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
  revokedAt: k.revokedAt,
});

export const createApiKey = defineTool({
  name: 'create_api_key',
  title: 'Create an organization API key',
  description:
    'Creates an svc_ key for the active organization (admin or owner; session only). Step-up: the first call answers 401 signature_required with a `challenge`; sign it with your wallet (personal_sign) and repeat with `signature` (and `code`/`emailOtp` if `required` lists them). The response holds `key` once.',
  scope: 'session',
  quotas: ['apiKeys'],
  input: z.object({
    name: z.string().trim().min(1).max(100).describe('A label for the key'),
    scope: z.enum(KEY_SCOPES).nullable().optional().describe('mcp:read, mcp:write or mcp:admin; omit for an unrestricted key'),
    ...stepUpProofFields,
  }),
  output: keyView.extend({ key: z.string().describe('The key itself: shown only in this response, store it now') }),
  rest: { method: 'POST', path: '/api/keys', status: 201 },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { services } = ctx;
    await requireRole(services.store, principal, 'admin');
    // Checked before the step-up too, so nobody signs for a key that cannot be made (create checks again, in its transaction).
    await assertRoom(services.store, 'apiKeys', ctx.quotas?.apiKeys, principal.organizationId);
    await requireStepUp(services, principal, 'org_api_key_manage', input, ctx.ip);
    const { record, key } = await services.keys.create({
      organizationId: principal.organizationId,
      userId: principal.userId,
      name: input.name,
      scope: input.scope ?? null,
      quota: ctx.quotas?.apiKeys,
      alongside: (db, made) =>
        recordAudit(db, {
          organizationId: principal.organizationId,
          actor: principal,
          action: 'key_created',
          target: made.id,
          ip: ctx.ip,
          details: { name: made.name, prefix: made.prefix, scope: made.scope },
        }),
    });
    return { ...view(record), key };
  },
});

export const listApiKeys = defineTool({
  name: 'list_api_keys',
  title: 'List API keys',
  description: 'Organization svc_ keys by prefix, with dates.',
  scope: 'mcp:admin',
  input: z.object({}),
  output: z.array(keyView),
  rest: { method: 'GET', path: '/api/keys/list' },
  mcp: { annotations: READ_ONLY_LOCAL, resultKey: 'keys' },
  async handler(_input, ctx) {
    const principal = requirePrincipal(ctx);
    return (await ctx.services.keys.list(principal.organizationId, { includeRevoked: true })).map(view);
  },
});

export const revokeApiKey = defineTool({
  name: 'revoke_api_key',
  title: 'Revoke API key',
  description: "Revokes an svc_ key. Step-up: retry with `signature` of the error's `challenge`.",
  scope: 'mcp:admin',
  input: z.object({ keyId: z.string().min(1).max(100), ...stepUpProofFields }),
  output: z.object({ id: z.string(), revokedAt: z.string() }),
  rest: { method: 'DELETE', path: '/api/keys/:keyId', body: STEP_UP_PROOF_FIELDS },
  mcp: { annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false } },
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { services } = ctx;
    const existing = (await services.keys.list(principal.organizationId, { includeRevoked: true })).find((k) => k.id === input.keyId);
    if (!existing) throw new ServiceError(404, 'not_found', `No API key ${JSON.stringify(input.keyId)} in this organization.`, { keyId: input.keyId });
    if (existing.revokedAt) return { id: existing.id, revokedAt: existing.revokedAt };
    await requireStepUp(services, principal, 'org_api_key_manage', input, ctx.ip);
    const revoked = await services.keys.revoke(principal.organizationId, input.keyId, (db, record) =>
      recordAudit(db, {
        organizationId: principal.organizationId,
        actor: principal,
        action: 'key_revoked',
        target: record.id,
        ip: ctx.ip,
        details: { name: record.name, prefix: record.prefix, via: ctx.transport },
      }),
    );
    if (!revoked) throw new ServiceError(404, 'not_found', `No API key ${JSON.stringify(input.keyId)} in this organization.`, { keyId: input.keyId });
    return { id: revoked.id, revokedAt: revoked.revokedAt! };
  },
});

export const keyTools = [createApiKey, listApiKeys, revokeApiKey];
