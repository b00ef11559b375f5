import { getAction, suggestActionType } from '../actions/index.ts';
import { prepareStep, readStep, web3Steps, type Web3Env } from '../onchain/steps/index.ts';
import { badRequest, ServiceError } from '../errors.ts';
import type { Services } from '../services.ts';
import { insufficientScopeToBroadcast, type DirectCaller, type DirectResponse } from './caller.ts';
import { executeWrite } from './write.ts';

/**
 * POST /api/execute/node: one web3 or protocol action from the registry, run
 * with `config` outside any workflow, by the same step code a workflow uses.
 * Reads answer 200 `{success, type:'read', actionType, output}` where output
 * holds the step's output fields (what a workflow step has under `data`).
 * Writes go through direct execution (scope, idempotency, spend cap with
 * source `direct`, stablecoin limit, sign → store → broadcast → verify) and
 * answer 202 with the direct execution record, type `node`, so
 * GET /api/execute/{id}/status works for them. There is no dry run here:
 * `simulate: true` anywhere is refused before anything else happens.
 */

export interface ExecuteNodeInput {
  actionType?: string;
  config?: Record<string, unknown>;
  simulate?: unknown;
  /** Fields sent next to config instead of inside it (for the error message only). */
  strayFields?: string[];
}

/**
 * Only a plain "no" lets the write go on. Any other value may mean a dry run: `"TRUE"` and `"yes"` once slipped past a
 * list of true spellings and sent the transaction (fail closed).
 */
const isOff = (value: unknown) => value === undefined || value === null || value === false || value === 'false' || value === '0' || value === 0;

function refuseSimulate(input: ExecuteNodeInput): void {
  const where = !isOff(input.simulate) ? 'simulate' : !isOff(input.config?.simulate) ? 'config.simulate' : undefined;
  if (!where) return;
  const value = where === 'simulate' ? input.simulate : input.config?.simulate;
  throw new ServiceError(
    400,
    'unsupported_param',
    `${where}: ${JSON.stringify(value)} is not supported by /api/execute/node, which has no dry run; nothing was reserved or signed. Send simulate: false (or omit it), or dry-run the call with POST /api/execute/contract-call and simulate: true.`,
    {
      param: where,
    },
  );
}

function stepFor(actionType: string | undefined) {
  if (!actionType || !actionType.trim())
    throw badRequest(
      'invalid_input',
      'actionType is required: the registry key of a web3 or protocol action, e.g. "web3/check-balance" (list_action_schemas).',
      { field: 'actionType' },
    );
  const key = actionType.trim();
  const step = web3Steps[key];
  if (step) return { key, step };
  if (getAction(key)) {
    throw badRequest(
      'action_not_runnable',
      `${key} runs only inside a workflow; /api/execute/node runs web3 and protocol actions (${Object.keys(web3Steps).join(', ')}).`,
      { actionType: key },
    );
  }
  const suggestion = suggestActionType(key);
  const runnable = suggestion && web3Steps[suggestion] ? suggestion : undefined;
  throw badRequest(
    'unknown_action',
    `Unknown actionType "${key}".${runnable ? ` Did you mean "${runnable}"?` : ''} Runnable here: ${Object.keys(web3Steps).join(', ')}.`,
    {
      actionType: key,
      ...(runnable ? { suggestion: runnable } : {}),
    },
  );
}

export async function executeNode(services: Services, caller: DirectCaller, input: ExecuteNodeInput): Promise<DirectResponse> {
  refuseSimulate(input);
  const { key, step } = stepFor(input.actionType ?? (typeof input.config?.actionType === 'string' ? input.config.actionType : undefined));
  if (!input.config) {
    const stray = input.strayFields?.length ? ` (found ${input.strayFields.join(', ')} at the top level)` : '';
    throw badRequest(
      'invalid_input',
      `config is required: the action's fields go inside config${stray}, e.g. {"actionType":"web3/check-balance","config":{"network":"31337","address":"0x..."}}.`,
      { field: 'config' },
    );
  }
  const { actionType: _type, simulate: _simulate, ...config } = input.config;
  const env: Web3Env = { services, organizationId: caller.organizationId };

  if (step.kind === 'read') {
    const output = await readStep(key, step, config, env);
    return { status: 200, body: { success: true, type: 'read', actionType: key, output } };
  }
  // Scope before any chain work: a read-only key never gets as far as preparing a send.
  if (!caller.canBroadcast) throw insufficientScopeToBroadcast();
  const prepared = await prepareStep(key, step, config, env);
  const write = { ...prepared, type: 'node', result: { actionType: key, ...prepared.result } };
  return executeWrite(services, caller, 'node', { actionType: key, config }, write, false);
}
