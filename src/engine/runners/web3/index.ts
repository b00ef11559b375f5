import { protocolActions } from '../../../actions/protocols.ts';
import { ServiceError } from '../../../errors.ts';
import { NodeError, type NodeRunner } from '../types.ts';
import { approveToken, transferFunds, transferToken } from './writes.ts';
import { checkAllowance, checkBalance, checkTokenBalance } from './reads.ts';
import { readContract, writeContract } from './contracts.ts';
import { decodeCalldata, getTransaction } from './transactions.ts';
import { protocolStep } from './protocol.ts';
import { sendFromWorkflow } from './send.ts';
import type { Web3Env, Web3Step } from './types.ts';

export type { Web3Env, Web3Step } from './types.ts';

/** Every web3 and protocol action this gateway can run, by actionType (shared with POST /api/execute/node). */
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
  ...Object.fromEntries(protocolActions.filter((a) => a.protocol).map((a) => [a.actionType, protocolStep(a.actionType, a.protocol!)])),
};

/** Config errors (400 ServiceErrors from the shared parsers) become the node's error, message unchanged. */
async function asNodeError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceError) throw new NodeError(error.message, { code: error.code, ...error.details });
    throw error;
  }
}

/** The workflow runner of a step: reads answer `{success, data, ...fields}`; writes the write-step output. */
export function runnerOf(step: Web3Step): NodeRunner {
  return async (config, ctx) => {
    const env: Web3Env = { services: ctx.services, organizationId: ctx.organizationId };
    if (step.kind === 'read') {
      const data = await asNodeError(() => step.read(config, env));
      return { success: true, data, ...data };
    }
    const write = await asNodeError(() => step.prepare(config, env));
    return sendFromWorkflow(write, ctx);
  };
}

export const web3Runners: Readonly<Record<string, NodeRunner>> = Object.fromEntries(Object.entries(web3Steps).map(([type, step]) => [type, runnerOf(step)]));
