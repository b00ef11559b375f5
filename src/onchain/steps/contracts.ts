import type { AbiFunction } from 'viem';
import { badRequest, ServiceError } from '../../errors.ts';
import { isRead, prepareContractCall, readCall, writeOf, type ContractCallInput, type PreparedCall } from '../contract-call.ts';
import { parseAmount } from '../money-inputs.ts';
import { chainOf, checkWriteRouting, requireString } from './config.ts';
import type { Web3Env, Web3Step } from './types.ts';

/**
 * Generic contract steps. The call is prepared by the shared
 * contract-call code in ../contract-call.ts (ABI parsing, function lookup by name and argument
 * count, exact encoding), so a workflow step and a direct call agree.
 */

/** SPEC Node: the function name lives in `abiFunction`; legacy `functionName` is not executed. */
function abiFunctionOf(config: Record<string, unknown>): string {
  const missing = config.abiFunction === undefined || config.abiFunction === null || config.abiFunction === '';
  if (missing && config.functionName !== undefined) {
    throw badRequest(
      'invalid_config',
      `abiFunction is missing; legacy functionName (${JSON.stringify(config.functionName)}) is no longer executed — rename it to abiFunction.`,
      { field: 'abiFunction' },
    );
  }
  return requireString(config, 'abiFunction', 'the name of the ABI function to call, e.g. "balanceOf"');
}

async function prepare(config: Record<string, unknown>, env: Web3Env, value?: string): Promise<PreparedCall> {
  const chain = chainOf(env, config);
  const input: ContractCallInput = {
    chainId: chain.chainId,
    contractAddress: config.contractAddress as string,
    abiFunction: abiFunctionOf(config),
    functionArgs: config.functionArgs as ContractCallInput['functionArgs'],
    abi: config.abi as ContractCallInput['abi'],
    gasLimitMultiplier: config.gasLimitMultiplier as string | undefined,
    value,
  };
  try {
    return await prepareContractCall(env.services, input, env.organizationId);
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'invalid_value') {
      throw badRequest(
        'invalid_config',
        `ethValue ${JSON.stringify(config.ethValue)} given, but ${input.abiFunction} is not payable; send ethValue only to payable functions.`,
        { field: 'ethValue' },
      );
    }
    throw error;
  }
}

/** A multi-output result as an object keyed by output name (an array when any output is unnamed). */
function shapeResult(fn: AbiFunction, result: unknown): unknown {
  if (fn.outputs.length < 2 || !Array.isArray(result) || fn.outputs.some((o) => !o.name)) return result;
  return Object.fromEntries(fn.outputs.map((o, i) => [o.name as string, result[i]]));
}

export const readContract: Web3Step = {
  kind: 'read',
  async read(config, env) {
    const call = await prepare(config, env);
    if (!isRead(call.fn)) {
      throw badRequest('invalid_config', `abiFunction "${call.fn.name}" is ${call.fn.stateMutability}, not view or pure: use web3/write-contract to send it.`, {
        field: 'abiFunction',
      });
    }
    return { result: shapeResult(call.fn, await readCall(env.services, call)) };
  },
};

export const writeContract: Web3Step = {
  kind: 'write',
  async prepare(config, env) {
    const chain = chainOf(env, config);
    checkWriteRouting(config, chain);
    const blank = config.ethValue === undefined || config.ethValue === null || config.ethValue === '';
    // Parsed here first so a bad value is reported under its own field name.
    const value = blank ? undefined : String(config.ethValue).trim();
    if (value !== undefined) parseAmount(value, 18, 'ethValue');
    const call = await prepare(config, env, value);
    if (isRead(call.fn)) {
      throw badRequest(
        'invalid_config',
        `abiFunction "${call.fn.name}" is ${call.fn.stateMutability}: it changes nothing, so there is nothing to send. Use web3/read-contract.`,
        { field: 'abiFunction' },
      );
    }
    return writeOf(call, 'write-contract');
  },
};
