import { z } from 'zod';
import { createUserKey, listUserKeys, revokeUserKey, USER_KEY_NAME_MAX } from '../src/auth/user-keys.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { recordAudit } from '../src/org/audit-log.ts';

/**
 * User webhook keys (`wfb_`) at /api/api-keys, REST only: they authenticate
 * webhook triggers and nothing else. Every tool here has an `mcp:*` scope, so
 * authorize() has already refused anonymous callers and `principal` is set.
 */

const keyListing = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string().describe('First characters of the key, to recognise it; the key itself is never shown again'),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
});

const createWebhookKey = defineTool({
  name: 'create_webhook_key',
  title: 'Create webhook key',
  description: [
    'Creates a user webhook key (`wfb_...`) for the calling user in this organization. The full `key` is in this response only: store it now.',
    'Send it as `Authorization: Bearer wfb_...` to trigger a workflow that has a Webhook trigger; it is not an organization key and is refused everywhere else.',
  ].join(' '),
  scope: 'mcp:admin',
  quotas: ['webhookKeys'],
  input: z.object({
    name: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(USER_KEY_NAME_MAX, `must be at most ${USER_KEY_NAME_MAX} characters`)
      .describe('A label to recognise the key by'),
  }),
  output: keyListing.omit({ lastUsedAt: true }).extend({ key: z.string().describe('The full key, shown once') }),
  rest: { method: 'POST', path: '/api/api-keys', status: 201 },
  rateLimit: 'objectWritesPerOrganization',
  mcp: false,
  async handler({ name }, ctx) {
    const principal = requirePrincipal(ctx);
    const { organizationId, userId } = principal;
    const { record, key } = await createUserKey(ctx.services.store, { organizationId, userId, name, quota: ctx.quotas?.webhookKeys }, (db, made) =>
      recordAudit(db, {
        organizationId,
        actor: principal,
        action: 'key_created',
        target: made.id,
        ip: ctx.ip,
        details: { kind: 'wfb', name: made.name, prefix: made.prefix },
      }),
    );
    return { ...record, key };
  },
});

const listWebhookKeys = defineTool({
  name: 'list_webhook_keys',
  title: 'List webhook keys',
  description: "Lists the organization's live webhook keys (`wfb_`): name, prefix, creation and last use. Keys and their hashes are never returned.",
  scope: 'mcp:read',
  input: z.object({}),
  output: z.array(keyListing),
  rest: { method: 'GET', path: '/api/api-keys' },
  mcp: false,
  handler: (_input, ctx) => listUserKeys(ctx.services.store, requirePrincipal(ctx).organizationId),
});

const deleteWebhookKey = defineTool({
  name: 'delete_webhook_key',
  title: 'Revoke webhook key',
  description: 'Revokes a webhook key at once: webhook calls presenting it are refused from now on. Cannot be undone; create a new key instead.',
  scope: 'mcp:admin',
  input: z.object({ keyId: z.string().min(1).max(100).describe('Key id from GET /api/api-keys') }),
  output: z.object({ success: z.literal(true), id: z.string() }),
  rest: { method: 'DELETE', path: '/api/api-keys/:keyId' },
  rateLimit: 'objectWritesPerOrganization',
  mcp: false,
  async handler({ keyId }, ctx) {
    const principal = requirePrincipal(ctx);
    await revokeUserKey(ctx.services.store, principal.organizationId, keyId, (db) =>
      recordAudit(db, {
        organizationId: principal.organizationId,
        actor: principal,
        action: 'key_revoked',
        target: keyId,
        ip: ctx.ip,
        details: { kind: 'wfb', reason: 'revoked' },
      }),
    );
    return { success: true as const, id: keyId };
  },
});

export const userKeyTools = [createWebhookKey, listWebhookKeys, deleteWebhookKey];
