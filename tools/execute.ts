import { z } from 'zod';
import { checkAndExecute, CONDITION_OPERATORS, type CheckAndExecuteInput } from '../src/execute/check-and-execute.ts';
import type { DirectCaller, DirectResponse } from '../src/execute/caller.ts';
import { executeWrite } from '../src/execute/write.ts';
import { isRead, prepareContractCall, readCall, writeOf, type ContractCallInput } from '../src/onchain/contract-call.ts';
import { prepareTransfer, type TransferInput } from '../src/onchain/transfer.ts';
import { directRecordSchema } from '../src/execute/records.ts';
import { refreshRecord } from '../src/execute/recovery.ts';
import { spendCapData, spendCapDataSchema } from '../src/guards/spend-cap.ts';
import { defineTool, type ToolContext } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { booleanish, idempotencyKeyArgument } from './inputs.ts';
import { mcpTwin } from './mcp-twin.ts';

/**
 * Direct execution (SPEC "Direct execution"): REST routes in camelCase and
 * their MCP twins in snake_case, generated from the same inputs (tools/mcp-twin.ts).
 * Every entry is rate-limited per API key (X-RateLimit-* on every response).
 */

const numberOrString = z.union([z.string(), z.number()]);
const chainField = numberOrString.describe('EIP-155 chain id, e.g. 8453 or "8453"');
const networkField = numberOrString.describe('Deprecated alias of chainId (a chain id or name); chainId wins when both are sent');
const jsonValue = () => z.union([z.string(), z.array(z.unknown())]);

/**
 * What a write route answers: the direct execution record (202), the
 * Simulation response (simulate: true), or for contract-call reads
 * `{success, type:'read', result}`. One object schema, because MCP output
 * schemas must be objects; `status` tells which it is.
 */
export const writeResponse = directRecordSchema
  .partial()
  .extend({
    status: z.string().describe('completed | failed | unconfirmed (record), simulated (dry run); absent on reads'),
    success: z.boolean().optional().describe('Simulation: false when it would revert or a limit would refuse it'),
    gasEstimate: z.string().optional(),
    wouldRevert: z.boolean().optional(),
    reason: z.string().optional().describe('Why the simulation would fail'),
    conditionMet: z.boolean().optional(),
    readResult: z.unknown().optional(),
  })
  .loose();

const readOrWriteResponse = writeResponse.extend({
  status: z.string().optional(),
  type: z.string().optional().describe('"read" for view/pure calls, which return result without signing'),
  contractAddress: z.string().optional(),
  functionName: z.string().optional(),
});

export function callerOf(ctx: ToolContext): DirectCaller {
  const principal = requirePrincipal(ctx);
  return {
    organizationId: principal.organizationId,
    apiKeyId: principal.keyId,
    canBroadcast: principal.scope !== 'mcp:read',
    idempotencyKey: ctx.idempotencyKey,
  };
}

export function respond(ctx: ToolContext, response: DirectResponse) {
  ctx.setStatus(response.status);
  return response.body as z.input<typeof writeResponse>;
}

/** The body the idempotency hash covers: everything except the dry-run switch. */
const hashable = <T extends { simulate?: unknown }>(input: T) =>
  Object.fromEntries(Object.entries(input).filter(([k, v]) => k !== 'simulate' && v !== undefined));

async function transfer(input: TransferInput, ctx: ToolContext) {
  const caller = callerOf(ctx);
  const { write } = await prepareTransfer(ctx.services, input);
  return respond(ctx, await executeWrite(ctx.services, caller, 'transfer', hashable(input), write, input.simulate === true));
}

async function contractCall(input: ContractCallInput, ctx: ToolContext) {
  const caller = callerOf(ctx);
  const call = await prepareContractCall(ctx.services, input, caller.organizationId);
  if (isRead(call.fn)) {
    const result = await readCall(ctx.services, call);
    return { success: true as const, type: 'read' as const, chainId: call.chain.chainId, contractAddress: call.contract, functionName: call.fn.name, result };
  }
  return respond(ctx, await executeWrite(ctx.services, caller, 'contract-call', hashable(input), writeOf(call), input.simulate === true));
}

async function conditional(input: CheckAndExecuteInput & { simulate?: boolean }, ctx: ToolContext) {
  return respond(ctx, await checkAndExecute(ctx.services, callerOf(ctx), input, input.simulate === true));
}

const WRITE_ANNOTATIONS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true } as const;

// ---- REST (camelCase, SPEC field names) ----------------------------------------

const transferBody = z.object({
  chainId: chainField.optional(),
  network: networkField.optional(),
  recipientAddress: z.string().describe('Recipient: all-lowercase or exact EIP-55 checksum'),
  amount: numberOrString.describe('Human units, e.g. "0.01"'),
  tokenAddress: z.string().optional().describe('ERC-20 to send; omit for the native token'),
  tokenConfig: z
    .union([z.string(), z.record(z.string(), z.unknown())])
    .optional()
    .describe('{"decimals":6,"symbol":"USDC"} when the token cannot be read'),
  gasLimitMultiplier: numberOrString.optional().describe('Gas limit = estimate × this (default 2; 1.5 on chain 999)'),
  simulate: booleanish.optional(),
});

/** The fields of one contract call, bare: `action` of check-and-execute repeats them without repeating their descriptions. */
const contractCallShape = {
  contractAddress: z.string(),
  functionName: z.string().optional(),
  abiFunction: z.string().optional(),
  functionArgs: jsonValue().optional(),
  abi: jsonValue().optional(),
  value: numberOrString.optional(),
};

const contractCallFields = {
  ...contractCallShape,
  functionName: contractCallShape.functionName.describe('Function to call, e.g. "balanceOf"; or pass data'),
  abiFunction: contractCallShape.abiFunction.describe('Alias of functionName; when both are sent they must agree'),
  functionArgs: jsonValue().describe('JSON array (or JSON array string) of arguments').optional(),
  abi: jsonValue().describe('ABI JSON; fetched from the explorer when omitted').optional(),
  value: contractCallShape.value.describe('Native value in ether units'),
};

const contractCallBody = z.object({
  ...contractCallFields,
  chainId: chainField.optional(),
  network: networkField.optional(),
  errorAbis: z
    .union([z.string(), z.array(z.unknown())])
    .optional()
    .describe('Up to 4 ABI documents (16 KB each) whose errors decode reverts; cannot change calldata'),
  gasLimitMultiplier: numberOrString.optional(),
  simulate: booleanish.optional(),
  data: z.string().optional().describe('Raw calldata instead of functionName + functionArgs'),
});

const conditionSchema = z.object({
  operator: z.enum(CONDITION_OPERATORS),
  value: z.union([z.string(), z.number(), z.boolean()]),
});

const checkAndExecuteBody = contractCallBody.omit({ data: true, errorAbis: true }).extend({
  condition: conditionSchema.describe('Compared with the read result; the action runs only when it holds'),
  action: z.object(contractCallShape).describe('The write to send when the condition holds (same chain; fields as above)'),
});

const executeTransferRest = defineTool({
  name: 'direct_transfer',
  deprecations: ['network-field'],
  title: 'Transfer native token or ERC-20',
  description:
    'Sends native token or an ERC-20 from the organization wallet and waits for the receipt. Answers 202 with the direct execution record (status completed, failed or unconfirmed). simulate:true dry-runs it. Idempotency-Key makes retries safe.',
  input: transferBody,
  output: writeResponse,
  scope: 'mcp:read',
  rateLimit: 'executePerKey',
  rest: { method: 'POST', path: '/api/execute/transfer', status: 202, idempotencyKey: true },
  mcp: false,
  handler: (input, ctx) => transfer(input, ctx),
});

const executeContractCallRest = defineTool({
  name: 'direct_contract_call',
  deprecations: ['network-field'],
  title: 'Call a contract function',
  description:
    'Reads return the decoded result (200, no signing); writes are signed by the organization wallet and answer 202 with the direct execution record, like transfer.',
  input: contractCallBody,
  output: readOrWriteResponse,
  scope: 'mcp:read',
  rateLimit: 'executePerKey',
  rest: { method: 'POST', path: '/api/execute/contract-call', status: 202, idempotencyKey: true },
  mcp: false,
  handler(input, ctx) {
    return contractCall(input, ctx).then((out) => {
      if ((out as { type?: string }).type === 'read') ctx.setStatus(200);
      return out;
    });
  },
});

const checkAndExecuteRest = defineTool({
  name: 'direct_check_and_execute',
  deprecations: ['network-field'],
  title: 'Read, compare, then write',
  description:
    'Reads a view function, compares the result with condition {operator, value}, and sends the action write only when it holds. Always returns an execution id; result.conditionMet says whether the write was sent.',
  input: checkAndExecuteBody,
  output: writeResponse,
  scope: 'mcp:read',
  rateLimit: 'executePerKey',
  rest: { method: 'POST', path: '/api/execute/check-and-execute', status: 202, idempotencyKey: true },
  mcp: false,
  handler: (input, ctx) => conditional(input as CheckAndExecuteInput & { simulate?: boolean }, ctx),
});

const getStatus = defineTool({
  name: 'get_direct_execution_status',
  title: 'Direct execution status',
  description:
    'The direct execution record with transactionLink and receipts re-verified from chain. Poll with bounded backoff while pollIntervalHint > 0 (seconds; 0 = terminal).',
  input: z.object({ executionId: z.string().trim().min(1).max(64) }),
  output: directRecordSchema,
  scope: 'mcp:read',
  rateLimit: 'executePerKey',
  rest: { method: 'GET', path: '/api/execute/:executionId/status' },
  mcp: { annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true } },
  async handler({ executionId }, ctx) {
    const record = await refreshRecord(ctx.services, requirePrincipal(ctx).organizationId, executionId);
    ctx.setHeader('X-Poll-Interval-Hint', String(record.pollIntervalHint));
    return record;
  },
});

const getSpendingLimits = defineTool({
  name: 'get_spending_limits',
  title: 'Daily spending caps and usage',
  description:
    "Today's (UTC) native-value caps and usage shared by direct execution and workflow runs: dailyUsedWei vs effectiveDailyCapWei, gas not counted. Check before large transfers.",
  input: z.object({}),
  output: spendCapDataSchema,
  scope: 'mcp:read',
  rest: { method: 'GET', path: '/api/analytics/spend-cap' },
  mcp: { annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false } },
  handler: (_input, ctx) => spendCapData(ctx.services.store, ctx.services.config, requirePrincipal(ctx).organizationId),
});

// ---- MCP twins (snake_case arguments, REFERENCE "MCP tools an agent expects"), generated from the REST inputs ----

/** Every MCP write tool: the dry-run switch plus an idempotency key argument; callable with mcp:read (simulate only). */
const MCP_WRITE = { mcp: { annotations: WRITE_ANNOTATIONS }, require: ['chainId'], mcpOnly: { idempotency_key: idempotencyKeyArgument } } as const;
const CALL_FIELDS = {
  contractAddress: 'contract_address',
  functionName: 'function_name',
  functionArgs: 'function_args',
  abi: 'abi',
  value: 'value',
} as const;

const executeTransferMcp = mcpTwin(executeTransferRest, {
  name: 'execute_transfer',
  title: 'Transfer tokens',
  description:
    'Sends native token (omit token_address) or an ERC-20 from the organization wallet. First call with simulate:true and continue only if success && !wouldRevert; then send with a fresh idempotency_key and poll get_direct_execution_status while pollIntervalHint > 0. amount is in human units ("0.01"), never wei.',
  restOnly: ['network'],
  fields: {
    chainId: 'chain_id',
    recipientAddress: 'to_address',
    amount: 'amount',
    tokenAddress: 'token_address',
    tokenConfig: 'token_config',
    gasLimitMultiplier: 'gas_limit_multiplier',
    simulate: 'simulate',
  },
  ...MCP_WRITE,
});

const executeContractCallMcp = mcpTwin(executeContractCallRest, {
  name: 'execute_contract_call',
  title: 'Call a contract',
  description:
    'Calls a contract function on chain_id. View/pure functions return {type:"read", result} without signing. Writes are signed by the organization wallet: simulate first (simulate:true), then send with an idempotency_key and poll get_direct_execution_status.',
  restOnly: ['network', 'abiFunction'],
  fields: {
    ...CALL_FIELDS,
    chainId: 'chain_id',
    errorAbis: 'error_abis',
    gasLimitMultiplier: 'gas_limit_multiplier',
    data: 'data',
    simulate: 'simulate',
  },
  ...MCP_WRITE,
});

const executeCheckAndExecuteMcp = mcpTwin(checkAndExecuteRest, {
  name: 'execute_check_and_execute',
  title: 'Read, compare, then write',
  description:
    'Reads function_name on contract_address, compares the result with condition {operator: eq|neq|gt|lt|gte|lte, value}, and sends action only when it holds. Returns an execution id either way (result.conditionMet).',
  restOnly: ['network', 'abiFunction', 'gasLimitMultiplier'],
  fields: {
    ...CALL_FIELDS,
    chainId: 'chain_id',
    condition: 'condition',
    action: { as: 'action', fields: CALL_FIELDS, restOnly: ['abiFunction'] },
    simulate: 'simulate',
  },
  ...MCP_WRITE,
});

export const executeTools = [
  executeTransferRest,
  executeContractCallRest,
  checkAndExecuteRest,
  getStatus,
  getSpendingLimits,
  executeTransferMcp,
  executeContractCallMcp,
  executeCheckAndExecuteMcp,
];
