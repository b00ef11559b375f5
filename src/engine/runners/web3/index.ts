import { ServiceError } from '../../../errors.ts';
import { prepareStep, readStep, web3Steps, type Web3Env, type Web3Step } from '../../../onchain/steps/index.ts';
import { NodeError, type NodeRunner } from '../types.ts';
import { sendFromWorkflow } from './send.ts';

/**
 * The workflow runners of the web3 and protocol steps: the shared step table
 * (src/onchain/steps) reads or prepares, and a write is sent from the
 * workflow through the one guarded write path (send.ts).
 */

/** The node's error keeps the ServiceError's message (it names the field and the value). */
async function asNodeError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceError) throw new NodeError(error.message, { code: error.code, ...error.details });
    throw error;
  }
}

/** The workflow runner of a step: reads answer `{success, data, ...fields}`; writes the write-step output. */
export function runnerOf(actionType: string, step: Web3Step): NodeRunner {
  return async (config, ctx) => {
    const env: Web3Env = { services: ctx.services, organizationId: ctx.organizationId };
    if (step.kind === 'read') {
      const data = await asNodeError(() => readStep(actionType, step, config, env));
      return { success: true, data, ...data };
    }
    const write = await asNodeError(() => prepareStep(actionType, step, config, env));
    return sendFromWorkflow(write, ctx);
  };
}

export const web3Runners: Readonly<Record<string, NodeRunner>> = Object.fromEntries(
  Object.entries(web3Steps).map(([type, step]) => [type, runnerOf(type, step)]),
);
