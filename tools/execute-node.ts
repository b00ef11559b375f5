import { z } from 'zod';
import { executeNode } from '../src/execute/node.ts';
import { GAS_TOP_UP_DEFAULT, GAS_TOP_UP_MAX, gasTopUp } from '../src/execute/gas-top-up.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { directRecordSchema } from '../src/execute/records.ts';
import { callerOf } from './execute.ts';

/**
 * POST /api/execute/node (one registry action with `config`, outside a
 * workflow) and POST /api/execute/gas-top-up. REST only; both rate-limited
 * per API key like the rest of direct execution.
 */

const numberOrString = z.union([z.string(), z.number()]);

const nodeBody = z.looseObject({
  actionType: z
    .string()
    .optional()
    .describe('Registry key of a web3 or protocol action, e.g. "web3/transfer-funds" or "aave-v3/supply" (config.actionType is read when omitted)'),
  config: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('The action config, exactly as in a workflow node (network, address, tokenConfig, amount, ...); templates are not resolved here'),
  simulate: z.unknown().optional().describe('Not supported: simulate:true (here or inside config) answers 400 unsupported_param; false is accepted'),
});

const readOutput = z.object({
  success: z.literal(true),
  type: z.literal('read'),
  actionType: z.string(),
  output: z.record(z.string(), z.unknown()).describe("The step's output fields (what a workflow step has under data)"),
});

const executeNodeRest = defineTool({
  name: 'direct_execute_node',
  title: 'Run one action outside a workflow',
  description:
    'Runs one web3 or protocol action from the registry with `config`, by the same code a workflow step uses. Reads answer 200 {success, type:"read", actionType, output}. Writes are signed by the organization wallet under the same guards as transfer (daily cap shared with workflows, stablecoin limit, Idempotency-Key) and answer 202 with the direct execution record (type "node"); poll GET /api/execute/{executionId}/status. simulate:true is refused (400 unsupported_param).',
  input: nodeBody,
  output: z.union([readOutput, directRecordSchema]),
  scope: 'mcp:read',
  rateLimit: 'executePerKey',
  rest: { method: 'POST', path: '/api/execute/node', status: 202, idempotencyKey: true },
  mcp: false,
  async handler(input, ctx) {
    const { actionType, config, simulate, ...rest } = input;
    const response = await executeNode(ctx.services, callerOf(ctx), { actionType, config, simulate, strayFields: Object.keys(rest) });
    ctx.setStatus(response.status);
    return response.body as z.input<typeof readOutput>;
  },
});

const gasTopUpRest = defineTool({
  name: 'direct_gas_top_up',
  title: 'Top up the organization wallet with gas',
  description: `Adds native token for gas to the organization wallet from the gateway's funding source: on the devnet (chain 31337) from anvil's prefunded account. amount in ether (default "${GAS_TOP_UP_DEFAULT}", at most "${GAS_TOP_UP_MAX}"). Without a funding source answers 409 gas_top_up_unavailable naming the wallet address to fund by hand.`,
  input: z.object({
    amount: numberOrString.optional().describe(`Ether to add, decimal string (default "${GAS_TOP_UP_DEFAULT}", max "${GAS_TOP_UP_MAX}")`),
    chainId: numberOrString.optional().describe('Chain to top up on; only the devnet (31337) has a funding source'),
  }),
  output: z.object({
    success: z.literal(true),
    chainId: z.number(),
    walletAddress: z.string(),
    amount: z.string().describe('Ether added'),
    amountWei: z.string(),
    balance: z.string().describe('Wallet balance after the top-up, in ether'),
  }),
  scope: 'mcp:write',
  rateLimit: 'executePerKey',
  rest: { method: 'POST', path: '/api/execute/gas-top-up' },
  mcp: false,
  handler: (input, ctx) => gasTopUp(ctx.services, requirePrincipal(ctx).organizationId, input),
});

export const executeNodeTools = [executeNodeRest, gasTopUpRest];
