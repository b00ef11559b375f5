import { z } from 'zod';
import { actionCategories, actionsOfPlugin, actions as allActions, getAction, pluginLabel, pluginTypeOf, pluginTypes, suggest } from '../src/actions/index.ts';
import { actionView, buildSchemaDocument, publicAction, type ActionDetail, type SchemaChain } from '../src/actions/schema-document.ts';
import { protocolSummaries, searchProtocolActions } from '../src/actions/search.ts';
import { notFound } from '../src/errors.ts';
import type { Services } from '../src/services.ts';
import { defineTool, READ_ONLY_LOCAL, type ToolContext } from './define.ts';
import { booleanish } from './inputs.ts';

/** Discovery of the action and trigger registry: what an agent reads before building a workflow. */

const readOnly = { annotations: READ_ONLY_LOCAL } as const;

const fieldMap = z.record(z.string(), z.string());

const protocolBindingSchema = z.object({
  protocol: z.string(),
  protocolName: z.string(),
  contract: z.string(),
  addresses: z.record(z.string(), z.string()).describe('Contract address by chain id'),
  kind: z.enum(['read', 'write']),
  functionName: z.string(),
  abi: z.looseObject({ type: z.string(), name: z.string() }).describe('ABI fragment of functionName'),
  args: z
    .array(
      z.object({
        name: z.string(),
        type: z.string(),
        field: z.string().optional().describe('Config field holding the value'),
        fallback: z.string().optional().describe('Used when the field is empty; "wallet" means the acting wallet address'),
        constant: z.string().optional().describe('Fixed value; no config field'),
      }),
    )
    .describe('ABI inputs in call order'),
  outputs: z.array(z.object({ name: z.string(), type: z.string() })),
  keywords: z.array(z.string()),
});

export const actionSchema = z.object({
  actionType: z.string().describe('The value for data.config.actionType'),
  label: z.string(),
  description: z.string(),
  category: z.string(),
  integration: z.string().nullable(),
  requiredFields: fieldMap,
  optionalFields: fieldMap,
  outputFields: fieldMap,
  requiresCredentials: z.boolean().optional().describe('Absent on system actions'),
  requiredPlan: z.enum(['free', 'pro', 'enterprise']).nullable(),
  featureEnabled: z
    .boolean()
    .describe('False when the action cannot run on this gateway (no runner yet, or its feature is rolled back); a workflow using it is refused'),
  featureId: z.string(),
  sourceHandles: z.array(z.string()).optional().describe('Condition only: edge sourceHandle values'),
  operators: z.array(z.string()).optional(),
  exampleConfig: z.record(z.string(), z.unknown()).optional(),
  protocol: protocolBindingSchema.optional(),
});

/** An action in `detail: 'summary'` listings; get_plugin {pluginType: actionType} has the rest. */
const actionSummarySchema = actionSchema.pick({ actionType: true, label: true, description: true, category: true, requiredPlan: true, featureEnabled: true });
/** Full first: a full action parses as one, a summary only as the second. */
const listedActionSchema = z.union([actionSchema, actionSummarySchema]);

const detailInput = z
  .enum(['summary', 'full'])
  .optional()
  .describe('summary: actionType, label, description, category, requiredPlan, featureEnabled; full: also fields, examples, protocol');

/**
 * REST answers keep their documented (full) shape by default. Over MCP a
 * listing defaults to summaries where it would otherwise flood an agent's
 * context; `mcpDefault` says where.
 */
function detailFor(requested: ActionDetail | undefined, ctx: ToolContext, mcpDefault: ActionDetail): ActionDetail {
  return requested ?? (ctx.transport === 'mcp' ? mcpDefault : 'full');
}

const triggerSchema = z.object({
  triggerType: z.string().describe('The value for data.config.triggerType'),
  label: z.string(),
  description: z.string(),
  requiredFields: fieldMap,
  optionalFields: fieldMap,
  outputFields: fieldMap,
  exampleConfig: z.record(z.string(), z.unknown()).optional(),
});

const schemaChainSchema = z.object({
  chainId: z.number().int(),
  name: z.string(),
  chainType: z.string(),
  isTestnet: z.boolean(),
  status: z.enum(['stable', 'experimental']),
});

const schemaDocumentSchema = z.object({
  version: z.string(),
  actions: z.record(z.string(), listedActionSchema),
  triggers: z.record(z.string(), triggerSchema),
  chains: z.array(schemaChainSchema).optional().describe('Omitted when includeChains is false'),
  platform: z.looseObject({ name: z.string(), description: z.string() }),
  templateSyntax: z.looseObject({ pattern: z.string(), description: z.string() }),
  builtinVariables: z.looseObject({ nodeId: z.string(), label: z.string() }),
  workflowStructure: z.looseObject({ node: z.looseObject({}), edge: z.looseObject({}) }),
  tips: z.array(z.string()),
});

/** Enabled chains with their stability, in the shape the schema document lists. */
function schemaChains(services: Services): SchemaChain[] {
  return services.chains.list({ includeDisabled: false }).map((c) => ({
    chainId: c.chainId,
    name: c.name,
    chainType: c.chainType,
    isTestnet: c.isTestnet,
    // Every catalog chain has a status; an unknown one is treated with the caution of experimental.
    status: services.chains.status(c.chainId) ?? 'experimental',
  }));
}

const listActionSchemas = defineTool({
  name: 'list_action_schemas',
  title: 'List action and trigger schemas',
  description: [
    'Workflow building blocks: actions (keyed by data.config.actionType), triggers, the {{@nodeId:Label.field}} syntax, node and edge structure, tips. Read it before create_workflow.',
    'Over MCP actions are summaries: get_plugin with an actionType (or detail "full") gives their fields. Only featureEnabled actions run here.',
  ].join(' '),
  input: z.object({
    category: z
      .string()
      .trim()
      .min(1)
      .optional()
      .describe(`Only actions of this category, case-insensitive: ${actionCategories().join(', ')}`),
    includeChains: booleanish.optional().describe('Include the chain list (default: true over REST, false over MCP: see list_chains)'),
    detail: detailInput.describe(`${detailInput.description}. Default: summary over MCP, full over REST`),
  }),
  output: schemaDocumentSchema,
  scope: 'public',
  rest: { method: 'GET', path: '/api/mcp/schemas', cacheControl: 'public, max-age=300' },
  mcp: readOnly,
  handler(input, ctx) {
    const doc = buildSchemaDocument(schemaChains(ctx.services), { category: input.category }, detailFor(input.detail, ctx, 'summary'));
    if (!(input.includeChains ?? ctx.transport !== 'mcp')) delete doc.chains;
    return doc;
  },
});

const pluginSchema = z.object({
  pluginType: z.string().describe('Prefix of the actionType (web3, aave-v3, discord, ...); system for built-in actions'),
  label: z.string(),
  integration: z.string().nullable(),
  categories: z.array(z.string()),
  actions: z.record(z.string(), listedActionSchema),
  action: actionSchema.optional().describe('The action named in the request, when pluginType was a full actionType'),
});

/** A plugin type, a full actionType, or either in another letter case. */
function resolvePlugin(requested: string): { pluginType: string; actionType?: string } | undefined {
  const exact = getAction(requested);
  if (exact) return { pluginType: pluginTypeOf(exact), actionType: exact.actionType };
  const lower = requested.toLowerCase();
  const plugin = pluginTypes().find((p) => p === lower);
  if (plugin) return { pluginType: plugin };
  const action = allActions.find((a) => a.actionType.toLowerCase() === lower);
  if (action) return { pluginType: pluginTypeOf(action), actionType: action.actionType };
  return undefined;
}

const getPlugin = defineTool({
  name: 'get_plugin',
  title: 'Get one plugin and its actions',
  description: [
    "One plugin's actions with their fields (protocol actions: address per chain, ABI fragment). pluginType: a plugin (web3, aave-v3, discord; system for the built-ins)",
    'or an actionType such as web3/write-contract, answered in full under `action`.',
  ].join(' '),
  input: z.object({
    pluginType: z.string().trim().min(1).describe('Plugin type (web3, aave-v3, ...) or a full actionType (web3/read-contract)'),
    detail: detailInput.describe(`For \`actions\`: ${detailInput.description}. Default: full (MCP, naming an actionType: summary)`),
  }),
  output: pluginSchema,
  scope: 'public',
  rest: { method: 'GET', path: '/api/mcp/schemas/:pluginType', cacheControl: 'public, max-age=300' },
  mcp: readOnly,
  handler({ pluginType, detail }, ctx) {
    const resolved = resolvePlugin(pluginType);
    if (!resolved) {
      const known = pluginTypes();
      const guess = suggest(pluginType, [...known, ...allActions.map((a) => a.actionType)]);
      throw notFound(`Unknown plugin type "${pluginType}".${guess ? ` Did you mean "${guess}"?` : ''} Plugin types: ${known.join(', ')}.`, {
        ...(guess ? { suggestion: guess } : {}),
        pluginTypes: known,
      });
    }
    const members = actionsOfPlugin(resolved.pluginType);
    const named = resolved.actionType ? getAction(resolved.actionType) : undefined;
    const membersDetail = detailFor(detail, ctx, named ? 'summary' : 'full');
    return {
      pluginType: resolved.pluginType,
      label: pluginLabel(resolved.pluginType),
      integration: members[0]?.integration ?? null,
      categories: [...new Set(members.map((a) => a.category))],
      actions: Object.fromEntries(members.map((a) => [a.actionType, actionView(a, membersDetail)])),
      ...(named ? { action: publicAction(named) } : {}),
    };
  },
});

const searchProtocolActionsTool = defineTool({
  name: 'search_protocol_actions',
  title: 'Search DeFi protocol actions',
  description: [
    'Finds DeFi protocol actions by intent, e.g. "supply usdc on base" or "health factor" (a chain named keeps actions deployed there), with fields, addresses and ABI fragment.',
    'Use a result actionType as data.config.actionType.',
  ].join(' '),
  input: z.object({
    query: z.string().trim().optional().describe('Free text, e.g. "borrow", "withdraw usdc on arbitrum", "liquidation risk"'),
    protocol: z.string().trim().optional().describe('Protocol slug, e.g. aave-v3'),
    detail: detailInput.describe(`${detailInput.description}. Default: full (MCP, no query or protocol: summary)`),
  }),
  output: z.object({
    query: z.string().nullable(),
    protocol: z.string().nullable(),
    chainIds: z.array(z.number().int()).describe('Chains named in the query, which narrowed the results'),
    count: z.number().int(),
    results: z.array(listedActionSchema),
    protocols: z
      .array(z.object({ protocol: z.string(), name: z.string(), contract: z.string(), chainIds: z.array(z.number().int()), actionTypes: z.array(z.string()) }))
      .describe('Every protocol the registry knows'),
    hint: z.string().optional(),
  }),
  scope: 'public',
  rest: { method: 'GET', path: '/api/mcp/protocol-actions', cacheControl: 'public, max-age=300' },
  mcp: readOnly,
  handler(input, ctx) {
    const { chains } = ctx.services;
    const found = searchProtocolActions({
      query: input.query,
      protocol: input.protocol,
      resolveChain: (term) => chains.resolve(term)?.chainId,
    });
    const protocols = protocolSummaries();
    return {
      query: input.query || null,
      protocol: input.protocol || null,
      chainIds: found.chainIds,
      count: found.actions.length,
      results: found.actions.map((a) => actionView(a, detailFor(input.detail, ctx, input.query || input.protocol ? 'full' : 'summary'))),
      protocols,
      ...(found.actions.length === 0
        ? { hint: `No protocol action matched. Protocols: ${protocols.map((p) => p.protocol).join(', ')}; call without query to list every protocol action.` }
        : {}),
    };
  },
});

export const schemaTools = [listActionSchemas, getPlugin, searchProtocolActionsTool];
