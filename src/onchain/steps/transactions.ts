import {
  BaseError,
  decodeFunctionData,
  getAddress,
  toFunctionSelector,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type Abi,
  type AbiFunction,
  type Hex,
} from 'viem';
import { badRequest } from '../../errors.ts';
import { jsonSafe } from '../json-safe.ts';
import { parseAbiDocument, parseEvmAddress } from '../money-inputs.ts';
import { chainOf } from './config.ts';
import type { Web3Env, Web3Step } from './types.ts';

/** Transaction lookups and calldata decoding: reads only. */

const isNotFound = (error: unknown, kind: typeof TransactionNotFoundError | typeof TransactionReceiptNotFoundError) =>
  error instanceof kind || (error instanceof BaseError && Boolean(error.walk((e) => e instanceof kind)));

export const getTransaction: Web3Step = {
  kind: 'read',
  async read(config, env) {
    const chain = chainOf(env, config);
    const hash = typeof config.transactionHash === 'string' ? config.transactionHash.trim() : config.transactionHash;
    if (typeof hash !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(hash)) {
      throw badRequest('invalid_config', `transactionHash must be a 0x-prefixed 32-byte hash (got ${JSON.stringify(config.transactionHash ?? null)}).`, {
        field: 'transactionHash',
        received: config.transactionHash,
      });
    }
    const client = env.services.chainClients.publicClient(chain.chainId);
    let tx;
    try {
      tx = await client.getTransaction({ hash: hash as Hex });
    } catch (error) {
      if (isNotFound(error, TransactionNotFoundError))
        throw badRequest('transaction_not_found', `Transaction ${hash} was not found on ${chain.name} (${chain.chainId}).`, { field: 'transactionHash' });
      throw error;
    }
    let receipt;
    try {
      receipt = await client.getTransactionReceipt({ hash: hash as Hex });
    } catch (error) {
      // Known to the node but not mined yet: pending.
      if (!isNotFound(error, TransactionReceiptNotFoundError)) throw error;
    }
    return {
      hash: tx.hash,
      // Checksummed like every other address a step returns (nodes answer lowercase).
      from: getAddress(tx.from),
      to: tx.to ? getAddress(tx.to) : null,
      value: tx.value.toString(),
      input: tx.input,
      blockNumber: receipt ? Number(receipt.blockNumber) : null,
      status: receipt ? receipt.status : 'pending',
      gasUsed: receipt ? receipt.gasUsed.toString() : null,
      chainId: chain.chainId,
    };
  },
};

async function abiForDecoding(config: Record<string, unknown>, env: Web3Env): Promise<Abi> {
  if (config.abi !== undefined && config.abi !== null && config.abi !== '') return parseAbiDocument(config.abi);
  if (!config.contractAddress) {
    throw badRequest(
      'invalid_config',
      'abi is required to decode calldata (a JSON ABI array string), or give contractAddress and network to fetch the verified ABI.',
      { field: 'abi' },
    );
  }
  const chain = chainOf(env, config);
  const contract = parseEvmAddress(config.contractAddress, 'contractAddress');
  return (await env.services.abiLookup.lookup(chain.chainId, contract, env.organizationId)).abi as Abi;
}

const signatureOf = (fn: AbiFunction) => `${fn.name}(${fn.inputs.map((i) => i.type).join(',')})`;

export const decodeCalldata: Web3Step = {
  kind: 'read',
  async read(config, env) {
    const calldata = typeof config.calldata === 'string' ? config.calldata.trim() : config.calldata;
    if (typeof calldata !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(calldata) || calldata.length < 10) {
      throw badRequest('invalid_config', `calldata must be 0x-prefixed hex starting with a 4-byte selector (got ${JSON.stringify(config.calldata ?? null)}).`, {
        field: 'calldata',
        received: config.calldata,
      });
    }
    const abi = await abiForDecoding(config, env);
    const selector = calldata.slice(0, 10).toLowerCase();
    const fn = abi.find((e): e is AbiFunction => e.type === 'function' && toFunctionSelector(e) === selector);
    if (!fn) throw badRequest('invalid_calldata', `calldata selector ${selector} matches no function of the ABI.`, { field: 'calldata', selector });
    let decoded;
    try {
      decoded = decodeFunctionData({ abi: [fn], data: calldata as Hex });
    } catch (error) {
      throw badRequest('invalid_calldata', `calldata does not decode as ${signatureOf(fn)}: ${(error as BaseError).shortMessage ?? (error as Error).message}`, {
        field: 'calldata',
      });
    }
    const values = decoded.args ?? [];
    const args = Object.fromEntries(fn.inputs.map((input, i) => [input.name || `arg${i}`, jsonSafe(values[i])]));
    return { functionName: fn.name, functionSignature: signatureOf(fn), args, selector };
  },
};
