import { badRequest } from '../errors.ts';
import { actionCategories, actions, triggers } from './index.ts';
import type { ActionDefinition, FieldMap, Plan, ProtocolBinding, TriggerDefinition } from './types.ts';

/**
 * The `GET /api/mcp/schemas` document: everything an agent needs to write a
 * valid workflow without reading other docs.
 */

export const SCHEMA_DOCUMENT_VERSION = '1.0.0';

export interface SchemaChain {
  chainId: number;
  name: string;
  chainType: string;
  isTestnet: boolean;
  status: 'stable' | 'experimental';
}

export interface PublicAction {
  actionType: string;
  label: string;
  description: string;
  category: string;
  integration: string | null;
  requiredFields: FieldMap;
  optionalFields: FieldMap;
  outputFields: FieldMap;
  /** Absent on system actions. */
  requiresCredentials?: boolean;
  requiredPlan: Plan | null;
  featureEnabled: boolean;
  /** Links to `features[].id` of `GET /api/features`. */
  featureId: string;
  sourceHandles?: string[];
  operators?: string[];
  exampleConfig?: Readonly<Record<string, unknown>>;
  protocol?: PublicProtocol;
}

/** A protocol binding as plain JSON (mutable copies, so callers can serialize or filter freely). */
export interface PublicProtocol extends Omit<ProtocolBinding, 'args' | 'outputs' | 'keywords'> {
  args: ProtocolBinding['args'][number][];
  outputs: { name: string; type: string }[];
  keywords: string[];
}

function publicProtocol(p: ProtocolBinding): PublicProtocol {
  return { ...p, args: p.args.map((a) => ({ ...a })), outputs: p.outputs.map((o) => ({ ...o })), keywords: [...p.keywords] };
}

/** Triggers carry no internal data, so their public form is the definition itself. */
export type PublicTrigger = TriggerDefinition;

export interface SchemaDocument<A = PublicAction> {
  version: string;
  actions: Record<string, A>;
  triggers: Record<string, PublicTrigger>;
  chains?: SchemaChain[];
  platform: typeof platform;
  templateSyntax: typeof templateSyntax;
  builtinVariables: typeof builtinVariables;
  workflowStructure: typeof workflowStructure;
  tips: string[];
}

export interface SchemaDocumentOptions {
  /** Keep only actions of this category (case-insensitive). Unknown categories are a 400. */
  category?: string;
}

/**
 * How much of each action a listing carries. `full`: every field, example and
 * protocol binding (the SPEC document). `summary`: enough to pick an action
 * (its key, label, description, category, whether it runs here), with the
 * details one get_plugin call away; it keeps a full listing within an
 * agent's context budget.
 */
export type ActionDetail = 'summary' | 'full';

export type ActionSummary = Pick<PublicAction, 'actionType' | 'label' | 'description' | 'category' | 'requiredPlan' | 'featureEnabled'>;

export function actionSummary(a: ActionDefinition): ActionSummary {
  return {
    actionType: a.actionType,
    label: a.label,
    description: a.description,
    category: a.category,
    requiredPlan: a.requiredPlan,
    featureEnabled: a.featureEnabled,
  };
}

export function actionView(a: ActionDefinition, detail: ActionDetail): PublicAction | ActionSummary {
  return detail === 'full' ? publicAction(a) : actionSummary(a);
}

/** The public view of an action, keys in a reading order; optional keys only where they apply. */
export function publicAction(a: ActionDefinition): PublicAction {
  return {
    actionType: a.actionType,
    label: a.label,
    description: a.description,
    category: a.category,
    integration: a.integration,
    requiredFields: a.requiredFields,
    optionalFields: a.optionalFields,
    outputFields: a.outputFields,
    ...(a.integration !== null ? { requiresCredentials: a.requiresCredentials } : {}),
    requiredPlan: a.requiredPlan,
    featureEnabled: a.featureEnabled,
    featureId: a.featureId,
    ...(a.integration === null && a.sourceHandles ? { sourceHandles: [...a.sourceHandles] } : {}),
    ...(a.integration === null && a.operators ? { operators: [...a.operators] } : {}),
    ...(a.exampleConfig ? { exampleConfig: a.exampleConfig } : {}),
    ...(a.integration !== null && a.protocol ? { protocol: publicProtocol(a.protocol) } : {}),
  };
}

export function publicTrigger(t: TriggerDefinition): PublicTrigger {
  return {
    triggerType: t.triggerType,
    label: t.label,
    description: t.description,
    requiredFields: t.requiredFields,
    optionalFields: t.optionalFields,
    outputFields: t.outputFields,
    ...(t.exampleConfig ? { exampleConfig: t.exampleConfig } : {}),
  };
}

/** Actions of one category, matched case-insensitively; throws 400 `invalid_input` naming the valid ones. */
export function actionsInCategory(category: string): ActionDefinition[] {
  const wanted = category.trim().toLowerCase();
  const match = actionCategories().find((c) => c.toLowerCase() === wanted);
  if (!match) {
    const valid = actionCategories();
    throw badRequest('invalid_input', `Unknown category "${category}". Valid categories: ${valid.join(', ')}.`, {
      validCategories: valid,
    });
  }
  return actions.filter((a) => a.category === match);
}

export function buildSchemaDocument(chains: SchemaChain[], options?: SchemaDocumentOptions): SchemaDocument;
export function buildSchemaDocument(chains: SchemaChain[], options: SchemaDocumentOptions, detail: ActionDetail): SchemaDocument<PublicAction | ActionSummary>;
export function buildSchemaDocument(
  chains: SchemaChain[],
  options: SchemaDocumentOptions = {},
  detail: ActionDetail = 'full',
): SchemaDocument<PublicAction | ActionSummary> {
  const selected = options.category === undefined ? actions : actionsInCategory(options.category);
  return {
    version: SCHEMA_DOCUMENT_VERSION,
    actions: Object.fromEntries(selected.map((a) => [a.actionType, actionView(a, detail)])),
    triggers: Object.fromEntries(triggers.map((t) => [t.triggerType, publicTrigger(t)])),
    chains: chains.map((c) => ({
      chainId: c.chainId,
      name: c.name,
      chainType: c.chainType,
      isTestnet: c.isTestnet,
      status: c.status,
    })),
    platform,
    templateSyntax,
    builtinVariables,
    workflowStructure,
    tips,
  };
}

const platform = {
  name: 'Flowgate',
  description:
    'MCP-first gateway for onchain workflow automation: build workflows from a trigger and actions, run them on demand or on triggers, and execute single transfers and contract calls directly.',
  authentication: {
    scheme: 'Bearer',
    header: 'Authorization: Bearer <API_KEY>',
    organizationKeyPrefix: 'svc_',
    userKeyPrefix: 'wfb_',
    notes: [
      'Organization API keys (svc_) authenticate the REST API and the MCP server.',
      'Scopes: mcp:read, mcp:write, mcp:admin; a key without scope is unrestricted. Broadcasting needs mcp:write or mcp:admin.',
      'User keys (wfb_) only authenticate webhook triggers.',
      'This document, GET /api/chains and the discovery documents are public.',
    ],
  },
  mcpEndpoint: '/mcp',
  restBasePath: '/api',
  openApi: '/openapi.json',
};

const templateSyntax = {
  pattern: '{{@<nodeId>:<Label>.<field>}}',
  description:
    "References the output of an upstream node: nodeId is the node's id, Label its data.label, then a dot path into its output. Templates are resolved by path lookup (no code is evaluated) before the step runs, in any string config field.",
  examples: [
    { template: '{{@balance:Check Balance.balance}}', meaning: 'field balance of node "balance" labelled "Check Balance"' },
    { template: '{{@fetch:HTTP Request.data.price.usd}}', meaning: 'nested path into an object' },
    { template: '{{@fetch:HTTP Request.data.items[0].price}}', meaning: 'array index, then a nested path' },
    { template: '{{@trigger:Manual Trigger.wallet}}', meaning: 'a field of the execution input (input fields are spread into the trigger output)' },
    { template: '{{@__system:System.isoTimestamp}}', meaning: 'a built-in variable' },
  ],
  rules: [
    'The node must be upstream of the node using the template.',
    'Inside a For Each body, read the current item with {{@<forEachNodeId>:<Label>.currentItem}} (and .index, .totalItems).',
    'functionArgs is a JSON array string; templates inside it are resolved before the JSON is parsed.',
  ],
};

const builtinVariables = {
  nodeId: '__system',
  label: 'System',
  variables: {
    unixTimestamp: 'number (seconds since the Unix epoch, at the time the step runs)',
    unixTimestampMs: 'number (milliseconds since the Unix epoch)',
    isoTimestamp: 'string (ISO 8601 timestamp)',
  },
  examples: ['{{@__system:System.unixTimestamp}}', '{{@__system:System.isoTimestamp}}'],
};

const workflowStructure = {
  node: {
    shape: {
      id: 'string (unique within the workflow)',
      type: 'string (trigger | action)',
      data: {
        label: 'string (human-readable; the <Label> in templates)',
        type: 'string (trigger | action; added on save, must equal the outer type if sent)',
        config: 'object (triggerType + trigger fields, or actionType + action fields)',
        status: 'string (optional, auto-assigned)',
        position: '{x: number, y: number} (optional, auto-assigned)',
      },
    },
    rules: [
      'type is "trigger" or "action". A plugin slug sent as type (e.g. "web3/check-balance") is accepted and rewritten into data.config.actionType.',
      'data.type is the kind discriminator; if you send it, it must equal the outer type.',
      'Trigger nodes set data.config.triggerType to a key of triggers; action nodes set data.config.actionType to a key of actions, matched exactly (case and spaces count).',
      'abi fields are JSON-encoded strings of the ABI array, never raw arrays; functionArgs likewise is a JSON array string.',
      'web3/write-contract names its function with abiFunction (not functionName, function or method).',
    ],
  },
  edge: {
    shape: {
      id: 'string',
      source: 'string (node id)',
      target: 'string (node id)',
      sourceHandle: 'string (optional; "true" or "false" on edges leaving a Condition node)',
    },
    rules: [
      'Edges leaving a Condition carry sourceHandle "true" or "false"; the branch not taken is skipped.',
      'A For Each runs every node between it and the next Collect once per item.',
    ],
  },
  rules: [
    'Exactly one trigger node per workflow.',
    'Connect every action node to the trigger through edges; edges must not form cycles (use For Each to repeat steps).',
    'Node ids are unique; edges reference existing node ids.',
  ],
  example: {
    nodes: [
      { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', type: 'trigger', config: { triggerType: 'Manual' } } },
      {
        id: 'balance',
        type: 'action',
        data: {
          label: 'Check Balance',
          type: 'action',
          config: { actionType: 'web3/check-balance', network: '8453', address: '{{@trigger:Manual Trigger.wallet}}' },
        },
      },
      {
        id: 'low',
        type: 'action',
        data: {
          label: 'Is Low',
          type: 'action',
          config: { actionType: 'Condition', condition: '{{@balance:Check Balance.balance}} < 0.01' },
        },
      },
      {
        id: 'alert',
        type: 'action',
        data: {
          label: 'Alert',
          type: 'action',
          config: {
            actionType: 'webhook/send-webhook',
            webhookUrl: 'https://example.com/hooks/low-balance',
            webhookMethod: 'POST',
            webhookPayload: '{"wallet":"{{@trigger:Manual Trigger.wallet}}","balance":"{{@balance:Check Balance.balance}}"}',
          },
        },
      },
    ],
    edges: [
      { id: 'e1', source: 'trigger', target: 'balance' },
      { id: 'e2', source: 'balance', target: 'low' },
      { id: 'e3', source: 'low', target: 'alert', sourceHandle: 'true' },
    ],
  },
};

const tips = [
  'Call validate_workflow before create_workflow or update_workflow; its errors name the node, the field path and a suggestion.',
  'network fields take the chain ID as a string ("8453"), not a name; chains lists the supported IDs and whether each is stable or experimental.',
  'Experimental chains may behave unreliably; do not use them for production writes without explicit opt-in.',
  'Amounts: transfer-funds, transfer-token and approve-token take decimal token units ("1.5"); protocol actions such as aave-v3/supply take raw integer units ("1500000" for 1.5 USDC).',
  'Before aave-v3/supply or aave-v3/repay, approve the Pool address of that chain (protocol.addresses) as spender with web3/approve-token.',
  'Writes spend from the organization wallet and count against the daily native-value cap; stablecoin transfers are limited to 100 USD per transaction.',
  'Test a contract write with execute_contract_call and simulate: true before putting it into a workflow.',
  'Every step output has success (boolean); on failure also error. Branch on results with a Condition node.',
  'Execution status is terminal only when the X-Poll-Interval-Hint header is 0; treat anything but success as not succeeded, and poll with wait_for_execution instead of tight loops.',
  'Actions with requiresCredentials: true need an integration (see list_integrations) or, for web3 writes, the organization wallet.',
  "Use get_plugin with a plugin type (web3, aave-v3, webhook, ...) for one plugin's actions, and search_protocol_actions to find DeFi actions by intent.",
  'Only actions with featureEnabled: true can run here; saving a workflow that uses an action with featureEnabled false is refused (action_not_available).',
];
