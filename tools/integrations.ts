import { z } from 'zod';
import {
  createIntegration,
  deleteIntegration,
  getIntegration,
  INTEGRATION_NAME_MAX,
  INTEGRATION_TYPE_NAMES,
  listIntegrations,
  updateIntegration,
  type Alongside,
} from '../src/org/integrations.ts';
import { testIntegration } from '../src/org/integration-tester.ts';
import { defineTool, READ_ONLY_LOCAL, type ToolContext } from './define.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { requirePrincipal } from './authorize.ts';

/**
 * Organization integrations (SPEC "Integrations"). Credential values are
 * accepted on create/update but never returned: get answers the non-secret
 * config plus `configuredSecrets`, the names of the credential fields set.
 */

const summaryShape = {
  id: z.string(),
  name: z.string(),
  type: z.string(),
  isManaged: z.boolean(),
  address: z.string().nullable().describe('EIP-55 checksummed address for web3 integrations; null for every other type'),
  createdAt: z.string(),
  updatedAt: z.string(),
};
const summarySchema = z.object(summaryShape);
const detailsSchema = z.object({
  ...summaryShape,
  config: z.record(z.string(), z.unknown()).describe('Non-credential config fields'),
  configuredSecrets: z.array(z.string()).describe('Names of the credential fields that are set; their values are never returned'),
});

const integrationId = z.string().min(1).max(100).describe('Integration id from list_integrations');
const integrationName = z.string().trim().min(1, 'must not be empty').max(INTEGRATION_NAME_MAX, `must be at most ${INTEGRATION_NAME_MAX} characters`);
const configObject = z.record(z.string(), z.unknown());
const typesText = INTEGRATION_TYPE_NAMES.join(', ');

const listIntegrationsTool = defineTool({
  name: 'list_integrations',
  title: 'List integrations',
  description: [
    "The organization's integrations, without config or credentials; filter by `type`.",
    'Use an id as `integrationId` in actions such as Database Query; for web3 ones prefer `address` over the name.',
  ].join(' '),
  scope: 'mcp:read',
  input: z.object({ type: z.string().min(1).max(50).optional().describe(`Only integrations of this type: ${typesText}`) }),
  output: z.object({ data: z.array(summarySchema) }),
  rest: { method: 'GET', path: '/api/integrations' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler: async ({ type }, ctx) => ({ data: await listIntegrations(ctx.services.store, requirePrincipal(ctx).organizationId, type) }),
});

const getIntegrationTool = defineTool({
  name: 'get_integration',
  title: 'Get integration',
  description: 'One integration with its non-credential config; `configuredSecrets` names the credentials that are set (never returned).',
  scope: 'mcp:read',
  input: z.object({ integrationId }),
  output: detailsSchema,
  rest: { method: 'GET', path: '/api/integrations/:integrationId' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler: ({ integrationId: id }, ctx) => getIntegration(ctx.services, requirePrincipal(ctx).organizationId, id),
});

const createIntegrationTool = defineTool({
  name: 'create_integration',
  title: 'Create integration',
  description: `Creates an integration. \`type\` is one of ${typesText}; \`config\` holds its fields (for example \`{webhookUrl}\` for discord). Credential fields are encrypted at rest and never returned.`,
  scope: 'mcp:write',
  quotas: ['integrations'],
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ name: integrationName, type: z.string().min(1).max(50), config: configObject.default({}) }),
  output: detailsSchema,
  rest: { method: 'POST', path: '/api/integrations', status: 201 },
  mcp: false,
  async handler(input, ctx) {
    return createIntegration(
      ctx.services,
      { organizationId: requirePrincipal(ctx).organizationId, ...input, quota: ctx.quotas?.integrations },
      auditIntegration(ctx, 'created', Object.keys(input.config)),
    );
  },
});

const updateIntegrationTool = defineTool({
  name: 'update_integration',
  title: 'Update integration',
  description:
    'Renames an integration or changes its config. In `config`, a credential field that is omitted or empty keeps the stored value and a value replaces it; a non-credential field set to null is removed.',
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z
    .object({ integrationId, name: integrationName.optional(), config: configObject.optional() })
    .refine((p) => p.name !== undefined || p.config !== undefined, { error: 'send at least one of name, config' }),
  output: detailsSchema,
  rest: { method: 'PUT', path: '/api/integrations/:integrationId' },
  mcp: false,
  async handler({ integrationId: id, ...patch }, ctx) {
    const fields = [...(patch.name === undefined ? [] : ['name']), ...Object.keys(patch.config ?? {})];
    return updateIntegration(ctx.services, requirePrincipal(ctx).organizationId, id, patch, auditIntegration(ctx, 'updated', fields));
  },
});

const deleteIntegrationTool = defineTool({
  name: 'delete_integration',
  title: 'Delete integration',
  description: 'Deletes an integration and its stored credentials. Workflow steps that reference it fail until they point at another one. Cannot be undone.',
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ integrationId }),
  output: z.object({ success: z.literal(true), id: z.string() }),
  rest: { method: 'DELETE', path: '/api/integrations/:integrationId' },
  mcp: false,
  async handler({ integrationId: id }, ctx) {
    const deleted = await deleteIntegration(ctx.services.store, requirePrincipal(ctx).organizationId, id, auditIntegration(ctx, 'deleted', []));
    return { success: true as const, id: deleted.id };
  },
});

const testIntegrationTool = defineTool({
  name: 'test_integration',
  title: 'Test integration',
  description: [
    "Tests an integration live with the provider's cheapest authenticated request (a database runs `select 1`): `success` only when it answered; web3 `untested`. `configOverrides` apply to this test only.",
  ].join(' '),
  scope: 'mcp:write',
  input: z.object({ integrationId, configOverrides: configObject.optional() }),
  output: z.object({
    status: z.enum(['success', 'untested']).describe('success: the provider was contacted and answered; untested: nothing was sent (web3 addresses)'),
    message: z.string(),
  }),
  rest: { method: 'POST', path: '/api/integrations/:integrationId/test' },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true } },
  handler: ({ integrationId: id, configOverrides }, ctx) => testIntegration(ctx.services, requirePrincipal(ctx).organizationId, id, configOverrides),
});

/** Who created, changed or deleted stored credentials, and which fields (names only, never values): written with the change. */
function auditIntegration(ctx: ToolContext, change: 'created' | 'updated' | 'deleted', fields: string[]): Alongside {
  const principal = requirePrincipal(ctx);
  return (db, integration) =>
    recordAudit(db, {
      organizationId: principal.organizationId,
      actor: principal,
      action: 'integration_changed',
      target: integration.id,
      ip: ctx.ip,
      details: { change, type: integration.type, name: integration.name.slice(0, 100), ...(fields.length ? { fields: fields.slice(0, 20).join(',') } : {}) },
    });
}

export const integrationTools = [
  listIntegrationsTool,
  getIntegrationTool,
  createIntegrationTool,
  updateIntegrationTool,
  deleteIntegrationTool,
  testIntegrationTool,
];
