import { protocolActions } from '../../actions/protocols.ts';
import { BaseError, ContractFunctionExecutionError } from 'viem';
import { isRpcUnreachable } from '../../chains/rpc-errors.ts';
import { ServiceError } from '../../errors.ts';
import { approveToken, transferFunds, transferToken } from './writes.ts';
import { checkAllowance, checkBalance, checkTokenBalance } from './reads.ts';
import { readContract, writeContract } from './contracts.ts';
import { decodeCalldata, getTransaction } from './transactions.ts';
import { queryEvents } from './events.ts';
import { protocolStep } from './protocol.ts';
import type { Web3Env, Web3Step } from './types.ts';
import type { PreparedWrite } from '../prepared-write.ts';

export type { Web3Env, Web3Step } from './types.ts';

/**
 * Every web3 and protocol action this gateway can run, by actionType: the
 * read/prepare halves that workflow steps (src/engine) and
 * POST /api/execute/node (src/execute) share. Nothing here signs.
 */
export const web3Steps: Readonly<Record<string, Web3Step>> = {
  'web3/check-balance': checkBalance,
  'web3/check-token-balance': checkTokenBalance,
  'web3/transfer-funds': transferFunds,
  'web3/transfer-token': transferToken,
  'web3/read-contract': readContract,
  'web3/write-contract': writeContract,
  'web3/approve-token': approveToken,
  'web3/check-allowance': checkAllowance,
  'web3/get-transaction': getTransaction,
  'web3/decode-calldata': decodeCalldata,
  'web3/query-events': queryEvents,
  ...Object.fromEntries(protocolActions.filter((a) => a.protocol).map((a) => [a.actionType, protocolStep(a.actionType, a.protocol!)])),
};

/**
 * Anything a step throws that is not already a ServiceError came from the
 * chain (RPC down, timeout). Only viem's short message is kept: the long one
 * names the RPC URL, which may carry a provider key and is never returned.
 */
function chainFailure(actionType: string, error: unknown): ServiceError {
  // viem wraps a transport failure in ContractFunctionExecutionError too: check reachability first.
  if (isRpcUnreachable(error))
    return new ServiceError(
      503,
      'rpc_unavailable',
      `${actionType}: the chain's RPC node could not be reached; nothing was sent. Retry later; this is not a revert.`,
    );
  // A contract that reverted or returned nothing is the caller's problem, not the chain's.
  if (error instanceof ContractFunctionExecutionError) return new ServiceError(400, 'read_failed', `${actionType}: ${error.shortMessage}`);
  const detail = error instanceof BaseError ? error.shortMessage : 'unexpected error';
  return new ServiceError(502, 'chain_unavailable', `${actionType}: the chain could not be read (${detail}); nothing was sent. Retry later.`);
}

/** A read step's output fields; config errors are 400s, chain failures 502s. */
export async function readStep(
  actionType: string,
  step: Extract<Web3Step, { kind: 'read' }>,
  config: Record<string, unknown>,
  env: Web3Env,
): Promise<Record<string, unknown>> {
  try {
    return await step.read(config, env);
  } catch (error) {
    throw error instanceof ServiceError ? error : chainFailure(actionType, error);
  }
}

/** A write step's prepared transaction (nothing signed); errors as readStep. */
export async function prepareStep(
  actionType: string,
  step: Extract<Web3Step, { kind: 'write' }>,
  config: Record<string, unknown>,
  env: Web3Env,
): Promise<PreparedWrite> {
  try {
    return await step.prepare(config, env);
  } catch (error) {
    throw error instanceof ServiceError ? error : chainFailure(actionType, error);
  }
}
