import { decodeFunctionData, encodeFunctionData, type Abi, type AbiFunction, type Address, type Hex } from 'viem';
import type { ChainEntry } from '../chains/catalog.ts';
import { isRpcUnreachable, rpcUnavailable } from '../chains/rpc-errors.ts';
import { revertReason } from '../chains/transactions.ts';
import { badRequest, ServiceError } from '../errors.ts';
import type { Services } from '../services.ts';
import { selectChain } from './chain.ts';
import { jsonSafe } from './json-safe.ts';
import {
  findFunction,
  parseAbiDocument,
  parseAmount,
  parseErrorAbis,
  parseEvmAddress,
  parseFunctionArgs,
  parseGasLimitMultiplier,
  pickFunctionName,
} from './money-inputs.ts';
import type { PreparedWrite } from './prepared-write.ts';

/**
 * Contract calls: ABI parsing, function lookup by name and argument count,
 * exact encoding; view/pure functions are read, others become a PreparedWrite.
 * Direct execution and the web3 contract steps share this, so they agree.
 */

export interface ContractCallInput {
  contractAddress: string;
  chainId?: string | number;
  network?: string | number;
  functionName?: string;
  abiFunction?: string;
  functionArgs?: string | unknown[];
  abi?: string | unknown[];
  errorAbis?: unknown;
  value?: string | number;
  gasLimitMultiplier?: string | number;
  simulate?: boolean;
  data?: string;
}

export interface PreparedCall {
  chain: ChainEntry;
  contract: Address;
  abi: Abi;
  fn: AbiFunction;
  args: unknown[];
  data: Hex;
  value: bigint;
  gasLimitMultiplier?: string;
  errorAbi: Abi;
}

export const isRead = (fn: AbiFunction) => fn.stateMutability === 'view' || fn.stateMutability === 'pure';

async function resolveAbi(services: Services, chain: ChainEntry, contract: Address, abi: unknown, organizationId: string): Promise<Abi> {
  if (abi !== undefined && abi !== null && abi !== '') return parseAbiDocument(abi);
  const found = await services.abiLookup.lookup(chain.chainId, contract, organizationId);
  return found.abi as Abi;
}

/** `organizationId`: whose explorer budget an ABI fetched from the block explorer counts against. */
export async function prepareContractCall(services: Services, input: ContractCallInput, organizationId: string): Promise<PreparedCall> {
  const chain = selectChain(services, input.chainId, input.network);
  const contract = parseEvmAddress(input.contractAddress, 'contractAddress', 'contract address');
  const name = pickFunctionName(input.functionName, input.abiFunction);
  const errorAbi = parseErrorAbis(input.errorAbis);
  const gasLimitMultiplier = parseGasLimitMultiplier(input.gasLimitMultiplier);
  const value = input.value === undefined || input.value === null || input.value === '' ? 0n : parseAmount(input.value, 18, 'value');
  if (!name && !input.data)
    throw badRequest('invalid_input', 'functionName is required (alias abiFunction), or raw calldata in data.', { field: 'functionName' });
  const abi = await resolveAbi(services, chain, contract, input.abi, organizationId);

  let fn: AbiFunction;
  let args: unknown[];
  if (input.data !== undefined && input.data !== '') {
    if (typeof input.data !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(input.data) || input.data.length < 10) {
      throw badRequest('invalid_calldata', 'data must be 0x-prefixed hex calldata starting with a 4-byte selector.', { field: 'data' });
    }
    let decoded;
    try {
      decoded = decodeFunctionData({ abi, data: input.data as Hex });
    } catch {
      throw badRequest('invalid_calldata', `data ${input.data.slice(0, 10)}… does not match any function of the ABI.`, {
        field: 'data',
        selector: input.data.slice(0, 10),
      });
    }
    fn = findFunction(abi, decoded.functionName, decoded.args?.length ?? 0);
    if (name && name.replace(/\(.*$/, '') !== fn.name)
      throw badRequest('function_name_conflict', `functionName "${name}" disagrees with the calldata, which calls "${fn.name}".`, {
        functionName: name,
        decoded: fn.name,
      });
    args = [...(decoded.args ?? [])];
  } else {
    args = parseFunctionArgs(input.functionArgs);
    fn = findFunction(abi, name!, args.length);
  }
  let data: Hex;
  try {
    data = encodeFunctionData({ abi: [fn], functionName: fn.name, args });
  } catch (error) {
    const detail = (error as { shortMessage?: string }).shortMessage ?? (error as Error).message;
    throw badRequest('function_args_mismatch', `functionArgs do not fit ${fn.name}(${fn.inputs.map((i) => i.type).join(', ')}): ${detail}`, {
      functionName: fn.name,
    });
  }
  if (value > 0n && fn.stateMutability !== 'payable')
    throw badRequest('invalid_value', `${fn.name} is not payable; send value only to payable functions.`, { field: 'value' });
  return { chain, contract, abi, fn, args, data, value, gasLimitMultiplier, errorAbi };
}

/** Reads a view/pure function; no signing, no record. */
export async function readCall(services: Services, call: PreparedCall): Promise<unknown> {
  try {
    const result = await services.chainClients
      .publicClient(call.chain.chainId)
      .readContract({ address: call.contract, abi: [...call.abi, ...call.errorAbi], functionName: call.fn.name, args: call.args });
    return jsonSafe(result);
  } catch (error) {
    if (isRpcUnreachable(error)) throw rpcUnavailable(call.chain, 'nothing was read');
    throw new ServiceError(
      400,
      'read_reverted',
      `Reading ${call.fn.name} on ${call.contract} failed: ${revertReason(error, [...call.abi, ...call.errorAbi])}`,
      { functionName: call.fn.name },
    );
  }
}

export function writeOf(call: PreparedCall, type = 'contract-call'): PreparedWrite {
  return {
    type,
    chain: call.chain,
    request: { to: call.contract, data: call.data, value: call.value },
    abi: [...call.abi, ...call.errorAbi],
    gasLimitMultiplier: call.gasLimitMultiplier,
    result: { functionName: call.fn.name, args: jsonSafe(call.args) },
  };
}
