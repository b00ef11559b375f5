import type { AnyTool } from './define.ts';
import { accountTools } from './account.ts';
import { chainTools } from './chains.ts';
import { documentationTools } from './documentation.ts';
import { executionTools } from './executions.ts';
import { featureTools } from './features.ts';
import { integrationTools } from './integrations.ts';
import { keyTools } from './keys.ts';
import { oauthClientTools } from './oauth-clients.ts';
import { projectTools } from './projects.ts';
import { publicTagTools } from './public-tags.ts';
import { publicWorkflowTools } from './public-workflows.ts';
import { schemaTools } from './schemas.ts';
import { tagTools } from './tags.ts';
import { validationTools } from './validation.ts';
import { workflowTools } from './workflows.ts';
import { executeTools } from './execute.ts';
import { executeNodeTools } from './execute-node.ts';
import { workflowCallTools } from './workflow-calls.ts';
import { analyticsTools } from './analytics.ts';
import { usageTools } from './usage.ts';

/**
 * How the registry's families read to a person or agent deciding whether to
 * use Flowgate: the A2A card's skills and the MCP docs page are built from
 * these, with the tool lists taken from the families themselves. An MCP tool
 * of a family not described here still appears (as a skill named after its
 * route group); a test keeps this list complete.
 */
export interface ToolFamily {
  id: string;
  name: string;
  description: string;
  tags: readonly string[];
  examples?: readonly string[];
  tools: readonly AnyTool[];
}

export const TOOL_FAMILIES: readonly ToolFamily[] = [
  {
    id: 'getting-started',
    name: 'Usage guide',
    description: 'The safe-usage recipe (simulate, send with an idempotency key, poll) and the tools available to the caller.',
    tags: ['documentation', 'onboarding'],
    examples: ['How do I use this gateway safely?'],
    tools: documentationTools,
  },
  {
    id: 'action-catalog',
    name: 'Action and protocol catalog',
    description: 'The action and trigger registry workflows are built from, plugin details, and protocol actions such as Aave V3 supply.',
    tags: ['schemas', 'actions', 'defi'],
    examples: ['Which actions can read a token balance?', 'Find a protocol action to supply USDC'],
    tools: schemaTools,
  },
  {
    id: 'chains',
    name: 'Chains and contracts',
    description: 'Supported chains with their status and explorers, and contract ABI lookup.',
    tags: ['chains', 'evm', 'solana', 'abi'],
    tools: chainTools,
  },
  {
    id: 'workflows',
    name: 'Build and manage workflows',
    description: 'Create, validate, update, duplicate, publish and delete workflows: a trigger plus action nodes joined by edges.',
    tags: ['workflows', 'automation', 'validation'],
    examples: ['Create a workflow that checks a wallet balance every hour', 'Validate this draft workflow'],
    tools: [...workflowTools, ...validationTools],
  },
  {
    id: 'executions',
    name: 'Run workflows and follow runs',
    description: 'Start runs, wait for them, read per-node logs and verified transaction hashes, cancel runs; totals and one list of all runs.',
    tags: ['executions', 'runs', 'onchain', 'analytics'],
    examples: ['Run workflow <id> and tell me whether it succeeded'],
    tools: [...executionTools, ...analyticsTools],
  },
  {
    id: 'direct-execution',
    name: 'Send transactions directly',
    description:
      'Transfers, contract calls and check-then-write from the organization wallet: simulate first, send with an idempotency key, poll the verified status; daily caps and the stablecoin limit apply.',
    tags: ['onchain', 'transfers', 'contract-calls', 'idempotency'],
    examples: ['Send 0.01 ETH to 0xabc… on Base', 'Read balanceOf on this token contract'],
    tools: [...executeTools, ...executeNodeTools],
  },
  {
    id: 'paid-workflow-calls',
    name: 'Call listed workflows (free or paid per call)',
    description: 'Discover listed workflows with their prices and input schemas, and call them; paid ones answer 402 with x402 and MPP offers.',
    tags: ['marketplace', 'payments', 'x402', 'mpp'],
    examples: ['Compare stablecoin yields on Base', 'Check the health of this Aave position'],
    tools: workflowCallTools,
  },
  {
    id: 'marketplace',
    name: 'Public workflow marketplace',
    description: 'Search published workflows and their public tags.',
    tags: ['marketplace', 'public-workflows'],
    tools: [...publicWorkflowTools, ...publicTagTools],
  },
  {
    id: 'organization',
    name: 'Organization resources',
    description:
      'Projects, tags, integrations (notification and service credentials), the feature snapshot, API keys (list; revoke behind a wallet-signed step-up), connected OAuth clients, the organization wallet, and usage against the deployment’s limits.',
    tags: ['organization', 'projects', 'tags', 'integrations', 'wallet', 'api-keys', 'oauth'],
    tools: [...projectTools, ...tagTools, ...integrationTools, ...featureTools, ...accountTools, ...keyTools, ...oauthClientTools, ...usageTools],
  },
];
