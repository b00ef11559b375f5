import { badRequest } from '../errors.ts';
import { replayBody, reserveIdempotencyKey } from '../guards/idempotency.ts';
import { newId } from '../ids.ts';
import type { Services } from '../services.ts';
import { isRead, prepareContractCall, readCall, writeOf, type ContractCallInput } from '../onchain/contract-call.ts';
import type { DirectCaller, DirectResponse } from './caller.ts';
import { executeWrite } from './write.ts';
import { finish, insertPending, loadRecord, toRecord } from './records.ts';

/** Read a value, compare it with a condition, and write only when it holds. */

export const CONDITION_OPERATORS = ['eq', 'neq', 'gt', 'lt', 'gte', 'lte'] as const;
export type ConditionOperator = (typeof CONDITION_OPERATORS)[number];

export interface CheckAndExecuteInput extends ContractCallInput {
  condition: { operator: ConditionOperator; value: string | number | boolean };
  action: Omit<ContractCallInput, 'chainId' | 'network' | 'simulate'>;
}

const INTEGER = /^-?\d+$/;

/** Integers compare exactly as big integers; anything else only by (string) equality. */
export function compare(left: unknown, operator: ConditionOperator, right: string | number | boolean): boolean {
  const l = typeof left === 'boolean' ? String(left) : String(left ?? '');
  const r = String(right);
  if (INTEGER.test(l) && INTEGER.test(r)) {
    const a = BigInt(l);
    const b = BigInt(r);
    return { eq: a === b, neq: a !== b, gt: a > b, lt: a < b, gte: a >= b, lte: a <= b }[operator];
  }
  if (operator === 'eq') return l.toLowerCase() === r.toLowerCase();
  if (operator === 'neq') return l.toLowerCase() !== r.toLowerCase();
  throw badRequest(
    'invalid_condition',
    `Operator ${operator} compares whole numbers; the read returned ${JSON.stringify(left)} and the condition value is ${JSON.stringify(right)}.`,
    { field: 'condition.value' },
  );
}

export async function checkAndExecute(services: Services, caller: DirectCaller, input: CheckAndExecuteInput, simulate: boolean): Promise<DirectResponse> {
  const read = await prepareContractCall(services, input, caller.organizationId);
  if (!isRead(read.fn))
    throw badRequest('invalid_input', `${read.fn.name} is not a view or pure function; the check must be a read.`, { field: 'functionName' });
  const action = await prepareContractCall(services, { ...input.action, chainId: read.chain.chainId }, caller.organizationId);
  if (isRead(action.fn)) throw badRequest('invalid_input', `action.${action.fn.name} is a read; the action must be a write.`, { field: 'action.functionName' });

  const readResult = await readCall(services, read);
  const conditionMet = compare(readResult, input.condition.operator, input.condition.value);
  const write = writeOf(action, 'check-and-execute');
  write.result = { ...write.result, conditionMet, readResult, condition: input.condition };

  if (conditionMet) {
    const response = await executeWrite(services, caller, 'check-and-execute', { ...input, simulate: undefined }, write, simulate);
    if (simulate && response.body && typeof response.body === 'object') Object.assign(response.body, { conditionMet, readResult });
    return response;
  }
  if (simulate) return { status: 200, body: { success: true, status: 'simulated', conditionMet, readResult, wouldExecute: false } };

  // Condition false: a completed execution with nothing sent, replayable like any other.
  const reservation = caller.idempotencyKey
    ? await reserveIdempotencyKey(
        services.store,
        { organizationId: caller.organizationId, endpoint: 'check-and-execute', key: caller.idempotencyKey },
        { ...input, simulate: undefined },
      )
    : undefined;
  if (reservation?.kind === 'replay') return { status: reservation.response.status, body: replayBody(reservation.response.body) };
  const id = newId();
  await insertPending(services.store, {
    id,
    organizationId: caller.organizationId,
    apiKeyId: caller.apiKeyId,
    type: 'check-and-execute',
    chainId: read.chain.chainId,
    from: null,
    to: action.contract,
    valueWei: 0n,
    result: write.result,
  });
  await finish(services.store, id, { status: 'completed', receipts: [] });
  const response = { status: 202, body: toRecord(services.chains, await loadRecord(services.store, caller.organizationId, id)) };
  await reservation?.settle('settled', id, response);
  return response;
}
