import { encodeFunctionData, type Address } from 'viem';
import type { ChainEntry } from '../../chains/catalog.ts';
import type { ProtocolArg, ProtocolBinding } from '../../actions/types.ts';
import { badRequest, ServiceError } from '../../errors.ts';
import { jsonSafe } from '../json-safe.ts';
import type { PreparedWrite } from '../prepared-write.ts';
import { parseEvmAddress, parseGasLimitMultiplier } from '../money-inputs.ts';
import { revertReason } from '../../chains/transactions.ts';
import { chainOf, checkWriteRouting, isBlank, walletAddress } from './config.ts';
import type { Web3Env, Web3Step } from './types.ts';

/**
 * One step implementation for every protocol action: the registry's binding
 * (contract address per chain, ABI fragment, how config fields map to
 * arguments, read or write) is all it needs. A new protocol action is data
 * in src/actions/protocols.ts, never code here.
 */

function contractOn(binding: ProtocolBinding, chain: ChainEntry): Address {
  const address = binding.addresses[chain.chainId];
  if (!address) {
    const supported = Object.keys(binding.addresses).join(', ');
    throw badRequest(
      'unsupported_chain',
      `${binding.protocolName} has no ${binding.contract} on ${chain.name} (${chain.chainId}); network must be one of ${supported}.`,
      { field: 'network', received: chain.chainId },
    );
  }
  return address;
}

/** An ABI argument from its textual value, exactly: integers as base-10 digits, addresses checksummed. */
function encodeArg(arg: ProtocolArg, raw: unknown, field: string): unknown {
  const text = typeof raw === 'number' || typeof raw === 'bigint' ? String(raw) : raw;
  if (arg.type === 'address') return parseEvmAddress(text, field);
  const int = /^(u?)int(\d*)$/.exec(arg.type);
  if (int) {
    if (typeof text !== 'string' || !(int[1] ? /^\d+$/ : /^-?\d+$/).test(text.trim())) {
      throw badRequest('invalid_config', `${field} must be a whole number in raw units as a string, e.g. "1000000" (got ${JSON.stringify(raw)}).`, {
        field,
        received: raw,
      });
    }
    const value = BigInt(text.trim());
    const bits = BigInt(int[2] || '256');
    const [min, max] = int[1] ? [0n, 2n ** bits - 1n] : [-(2n ** (bits - 1n)), 2n ** (bits - 1n) - 1n];
    if (value < min || value > max) throw badRequest('invalid_config', `${field} ${text.trim()} does not fit ${arg.type}.`, { field, received: raw });
    return value;
  }
  if (arg.type === 'bool') {
    if (text === true || text === 'true') return true;
    if (text === false || text === 'false') return false;
    throw badRequest('invalid_config', `${field} must be true or false (got ${JSON.stringify(raw)}).`, { field, received: raw });
  }
  return text;
}

async function argsOf(binding: ProtocolBinding, config: Record<string, unknown>, env: Web3Env): Promise<unknown[]> {
  const args: unknown[] = [];
  for (const arg of binding.args) {
    if ('constant' in arg) {
      args.push(encodeArg(arg, arg.constant, arg.name));
      continue;
    }
    let value = config[arg.field];
    if (isBlank(value)) {
      if (arg.fallback === undefined)
        throw badRequest('invalid_config', `${arg.field} is required (${arg.type} ${arg.name} of ${binding.functionName}).`, { field: arg.field });
      value = arg.fallback === 'wallet' ? await walletAddress(env) : arg.fallback;
    }
    args.push(encodeArg(arg, value, arg.field));
  }
  return args;
}

export function protocolStep(actionType: string, binding: ProtocolBinding): Web3Step {
  if (binding.kind === 'read') {
    return {
      kind: 'read',
      async read(config, env) {
        const chain = chainOf(env, config);
        const address = contractOn(binding, chain);
        const args = await argsOf(binding, config, env);
        let result: unknown;
        try {
          result = await env.services.chainClients
            .publicClient(chain.chainId)
            .readContract({ address, abi: [binding.abi], functionName: binding.functionName, args });
        } catch (error) {
          throw new ServiceError(
            400,
            'read_reverted',
            `${actionType}: reading ${binding.functionName} on ${address} failed: ${revertReason(error, [binding.abi])}`,
            { functionName: binding.functionName },
          );
        }
        const values = binding.abi.outputs.length > 1 ? (result as readonly unknown[]) : [result];
        const named = Object.fromEntries(binding.abi.outputs.map((o, i) => [o.name || `output${i}`, jsonSafe(values[i])]));
        return { ...named, contractAddress: address };
      },
    };
  }
  return {
    kind: 'write',
    async prepare(config, env): Promise<PreparedWrite> {
      const chain = chainOf(env, config);
      checkWriteRouting(config, chain);
      const address = contractOn(binding, chain);
      const args = await argsOf(binding, config, env);
      const data = encodeFunctionData({ abi: [binding.abi], functionName: binding.functionName, args });
      return {
        type: actionType,
        chain,
        request: { to: address, data, value: 0n },
        abi: [binding.abi],
        gasLimitMultiplier: parseGasLimitMultiplier(config.gasLimitMultiplier),
        result: { actionType, contractAddress: address, functionName: binding.functionName, args: jsonSafe(args) },
      };
    },
  };
}
