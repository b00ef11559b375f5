import { encodeFunctionData, getAddress, parseEther, type Abi, type AbiFunction, type AbiParameter } from 'viem';
import { z } from 'zod';
import { ServiceError } from '../errors.ts';
import type { WorkflowNode } from '../engine/graph.ts';
import { TEMPLATE_PATTERN } from '../engine/templates.ts';

/**
 * Write-type listings never execute: the call answers the unsigned
 * transaction of the workflow's contract-write node, with the caller's
 * inputs substituted for the trigger templates in its functionArgs.
 */

export const calldataSchema = z.object({ type: z.literal('calldata'), to: z.string(), data: z.string(), value: z.string().describe('wei, decimal') });
export type Calldata = z.output<typeof calldataSchema>;

const misconfigured = (detail: string) =>
  new ServiceError(500, 'listing_misconfigured', `This write workflow cannot build its transaction: ${detail}. This is a listing bug; nothing was executed.`);

/** Replaces `{{@<trigger>:<Label>.<field>}}` with the input value (the value itself when the template is the whole string). */
function substitute(value: unknown, trigger: WorkflowNode, inputs: Record<string, unknown>): unknown {
  if (Array.isArray(value)) return value.map((v) => substitute(v, trigger, inputs));
  if (typeof value !== 'string') return value;
  const prefix = `${trigger.id}:${trigger.data.label}.`;
  const field = (ref: string) => {
    if (!ref.startsWith(prefix)) throw misconfigured(`template {{@${ref}}} does not read a trigger input`);
    return inputs[ref.slice(prefix.length)];
  };
  const whole = /^\{\{\s*@([^{}]*?)\s*\}\}$/.exec(value);
  if (whole) return field(whole[1]!);
  return value.replace(TEMPLATE_PATTERN, (_m, ref: string) => String(field(ref) ?? ''));
}

/** JSON values to the ABI's types: integers as bigint, booleans from "true"/"false", addresses checksummed. */
function coerce(param: AbiParameter, value: unknown): unknown {
  if (param.type.endsWith(']') && Array.isArray(value)) {
    const inner = { ...param, type: param.type.slice(0, param.type.lastIndexOf('[')) } as AbiParameter;
    return value.map((v) => coerce(inner, v));
  }
  if (param.type === 'tuple' && 'components' in param && Array.isArray(value)) return param.components.map((c, i) => coerce(c, value[i]));
  if (/^u?int\d*$/.test(param.type)) return BigInt(String(value));
  if (param.type === 'bool') return value === true || value === 'true';
  if (param.type === 'address' && typeof value === 'string') return getAddress(value);
  return value;
}

export function buildCalldata(nodes: readonly WorkflowNode[], inputs: Record<string, unknown>): Calldata {
  const trigger = nodes.find((n) => n.type === 'trigger');
  const write = nodes.find((n) => n.data.config.actionType === 'web3/write-contract');
  if (!trigger || !write) throw misconfigured('it has no trigger or no web3/write-contract node');
  const config = write.data.config;
  let abi: Abi;
  let args: unknown[];
  try {
    abi = JSON.parse(String(config.abi)) as Abi;
    const raw = config.functionArgs === undefined || config.functionArgs === '' ? [] : JSON.parse(String(config.functionArgs));
    args = substitute(raw, trigger, inputs) as unknown[];
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw misconfigured('abi or functionArgs is not valid JSON');
  }
  const fn = abi.find((item): item is AbiFunction => item.type === 'function' && item.name === config.abiFunction);
  if (!fn) throw misconfigured(`the ABI has no function ${String(config.abiFunction)}`);
  try {
    const data = encodeFunctionData({ abi: [fn], functionName: fn.name, args: fn.inputs.map((p, i) => coerce(p, args[i])) });
    const value = typeof config.ethValue === 'string' && config.ethValue.trim() !== '' ? parseEther(config.ethValue.trim()).toString() : '0';
    return { type: 'calldata', to: getAddress(String(config.contractAddress)), data, value };
  } catch (error) {
    // Inputs already matched the listing's schema, so an encoding failure is a value the ABI cannot take (e.g. a malformed bytes32).
    throw new ServiceError(400, 'invalid_input', `The inputs cannot be encoded for ${fn.name}: ${(error as Error).message.split('\n')[0]}`);
  }
}
