import { computeActions } from './compute.ts';
import { getFeature } from './features.ts';
import { notificationActions } from './notifications.ts';
import { protocolActions } from './protocols.ts';
import { suggest } from '../text/suggest.ts';
import { systemActions } from './system.ts';
import { triggers } from './triggers.ts';
import type { ActionCategory, ActionDefinition, ActionSpec, TriggerDefinition, TriggerType } from './types.ts';
import { web3Actions } from './web3.ts';
import { deepFreeze } from '../immutable.ts';

/**
 * The action and trigger registry: the single source for the schema
 * document, the feature snapshot and workflow validation.
 */

export type * from './types.ts';
export { features, getFeature } from './features.ts';
export { CONDITION_OPERATORS } from './system.ts';
export { suggest } from '../text/suggest.ts';

/** Plan and rollout state come from the action's feature; an action without a runner is never enabled. */
function resolve(spec: ActionSpec): ActionDefinition {
  const feature = getFeature(spec.featureId);
  return { ...spec, requiredPlan: feature.requiredPlan, featureEnabled: !feature.rolledBack && spec.runnable !== false };
}

const specs: readonly ActionSpec[] = [...systemActions, ...web3Actions, ...protocolActions, ...notificationActions, ...computeActions];

/** Frozen so a consumer cannot change the registry for everyone else by editing what it was handed. */
export const actions: readonly ActionDefinition[] = deepFreeze(specs.map(resolve));
deepFreeze(triggers);

const actionsByType = new Map(actions.map((a) => [a.actionType, a]));
const triggersByType = new Map<string, TriggerDefinition>(triggers.map((t) => [t.triggerType, t]));

if (actionsByType.size !== actions.length) throw new Error('duplicate actionType in the action registry');

export { triggers };

export const actionTypes = (): string[] => actions.map((a) => a.actionType);

/** Exact key match only; use suggestActionType for near misses. */
export const getAction = (key: string): ActionDefinition | undefined => actionsByType.get(key);

export const suggestActionType = (input: string): string | undefined => suggest(input, actionTypes());

export const triggerTypes = (): TriggerType[] => triggers.map((t) => t.triggerType);

export const getTrigger = (key: string): TriggerDefinition | undefined => triggersByType.get(key);

/** Words agents use for a trigger type that are not close to its name. */
const TRIGGER_ALIASES: Readonly<Record<string, TriggerType>> = {
  cron: 'Schedule',
  scheduled: 'Schedule',
  timer: 'Schedule',
  log: 'Event',
  contractevent: 'Event',
};

export const suggestTriggerType = (input: string): string | undefined => {
  // "Manual Trigger", "schedule_trigger": the word trigger is not part of the key.
  const bare = input.trim().replace(/[\s_-]*trigger$/i, '');
  return TRIGGER_ALIASES[bare.toLowerCase().replace(/[\s_-]+/g, '')] ?? suggest(bare, triggerTypes());
};

/** Config field names agents often use for a field of another name (SPEC: `functionName` → `abiFunction`). */
const FIELD_ALIASES: Readonly<Record<string, readonly string[]>> = {
  abiFunction: ['functionName', 'function', 'method', 'methodName'],
  functionArgs: ['args', 'arguments', 'params', 'functionArguments'],
  network: ['chainId', 'chain', 'chain_id', 'networkId'],
  contractAddress: ['address', 'contract', 'to', 'contract_address'],
  recipientAddress: ['to', 'recipient', 'toAddress', 'to_address'],
  ethValue: ['value', 'amount'],
  condition: ['expression', 'expr'],
  endpoint: ['url'],
  httpMethod: ['method'],
};

/**
 * The config field of `actionType` that `field` most likely meant, or undefined.
 * Known aliases first (only when the action has the target field), then spelling.
 */
export function suggestConfigField(actionType: string, field: string): string | undefined {
  const action = getAction(actionType);
  if (!action) return undefined;
  const fields = [...Object.keys(action.requiredFields), ...Object.keys(action.optionalFields)];
  if (fields.includes(field)) return field;
  const aliased = fields.find((f) => FIELD_ALIASES[f]?.some((a) => a.toLowerCase() === field.trim().toLowerCase()));
  return aliased ?? suggest(field, fields);
}

/** Categories in registry order, each once. */
export const actionCategories = (): ActionCategory[] => [...new Set(actions.map((a) => a.category))];

/** `web3` for `web3/read-contract`; `system` for built-in actions, which have no plugin prefix. */
export const pluginTypeOf = (action: ActionDefinition): string =>
  action.integration === null ? 'system' : action.actionType.slice(0, action.actionType.indexOf('/'));

export const pluginTypes = (): string[] => [...new Set(actions.map(pluginTypeOf))];

export const actionsOfPlugin = (pluginType: string): ActionDefinition[] => actions.filter((a) => pluginTypeOf(a) === pluginType);

/** Actions backed by a protocol binding (`<protocol>/<action>` with contract data). */
export const protocolActionDefinitions = (): ActionDefinition[] => actions.filter((a) => a.integration !== null && a.protocol !== undefined);

/** Contract address of a protocol action on a chain, or undefined when it is not deployed there. */
export function protocolContractAddress(actionType: string, chainId: number): string | undefined {
  const action = getAction(actionType);
  return action && action.integration !== null ? action.protocol?.addresses[chainId] : undefined;
}

/** Display names of plugin types; unknown ones fall back to the slug. */
const PLUGIN_LABELS: Readonly<Record<string, string>> = {
  system: 'System',
  web3: 'Web3',
  'aave-v3': 'Aave V3',
  discord: 'Discord',
  slack: 'Slack',
  telegram: 'Telegram',
  sendgrid: 'SendGrid',
  resend: 'Resend',
  webhook: 'Webhook',
  code: 'Code',
  math: 'Math',
};

export const pluginLabel = (pluginType: string): string => PLUGIN_LABELS[pluginType] ?? pluginType;

/** Actions that sign and broadcast a transaction from the organization wallet. */
const TRANSACTION_ACTIONS: ReadonlySet<string> = new Set(['web3/transfer-funds', 'web3/transfer-token', 'web3/write-contract', 'web3/approve-token']);

export function isWriteAction(actionType: string): boolean {
  if (TRANSACTION_ACTIONS.has(actionType)) return true;
  const action = getAction(actionType);
  return action !== undefined && 'protocol' in action && action.protocol?.kind === 'write';
}
