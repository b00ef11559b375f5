import type { FeatureDefinition, FeatureId } from './types.ts';

/**
 * Plan-gated features. Actions name their feature by id; an action's
 * `requiredPlan` and `featureEnabled` are read from here, so the schema
 * document and the feature snapshot always agree.
 */

export const features: readonly FeatureDefinition[] = [
  {
    id: 'workflow-control',
    name: 'Workflow control flow',
    description: 'Conditions, loops and HTTP calls that connect the other steps of a workflow.',
    category: 'System',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'database-query',
    name: 'Database queries',
    description: 'SQL queries against a database integration.',
    category: 'System',
    requiredPlan: 'pro',
    rolledBack: false,
  },
  {
    id: 'web3-wallet',
    name: 'Balances and transfers',
    description: 'Native and ERC-20 balances, transfers from the organization wallet and transaction lookups.',
    category: 'Web3',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'web3-contracts',
    name: 'Contract calls',
    description: 'Read and write any contract by ABI and decode calldata.',
    category: 'Web3',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'web3-event-queries',
    name: 'Event log queries',
    description: 'Past event logs of a contract event.',
    category: 'Web3',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'web3-token-approvals',
    name: 'Token approvals',
    description: 'ERC-20 approvals and allowance checks.',
    category: 'Web3',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'protocol-aave-v3',
    name: 'Aave V3',
    description: 'Supply, withdraw, borrow and repay on Aave V3, and read account health.',
    category: 'DeFi',
    requiredPlan: 'pro',
    rolledBack: false,
  },
  {
    id: 'notifications-chat',
    name: 'Chat notifications',
    description: 'Messages to Discord, Slack and Telegram.',
    category: 'Notifications',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'notifications-email',
    name: 'E-mail notifications',
    description: 'E-mail through SendGrid or Resend.',
    category: 'Notifications',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'outbound-webhooks',
    name: 'Outbound webhooks',
    description: 'HTTP requests with a JSON payload to any URL.',
    category: 'Notifications',
    requiredPlan: null,
    rolledBack: false,
  },
  {
    id: 'code-execution',
    name: 'Code execution',
    description: 'Sandboxed JavaScript steps.',
    category: 'Code',
    requiredPlan: 'pro',
    rolledBack: false,
  },
  {
    id: 'math-aggregate',
    name: 'Aggregation',
    description: 'Sum, average, minimum, maximum and count over lists.',
    category: 'Math',
    requiredPlan: null,
    rolledBack: false,
  },
];

const byId = new Map(features.map((f) => [f.id, f]));

export function getFeature(id: FeatureId): FeatureDefinition {
  const feature = byId.get(id);
  // Unreachable while FeatureId and the table agree; the type system checks the ids, this checks the table.
  if (!feature) throw new Error(`feature ${id} is not defined`);
  return feature;
}
