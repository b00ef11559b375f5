import { encodeFunctionData, erc20Abi, type Address } from 'viem';
import { isRpcUnreachable, rpcUnavailable } from '../chains/rpc-errors.ts';
import { badRequest } from '../errors.ts';
import type { Services } from '../services.ts';
import { selectChain } from './chain.ts';
import { parseAmount, parseEvmAddress, parseGasLimitMultiplier, parseTokenConfig } from './money-inputs.ts';
import type { PreparedWrite } from './prepared-write.ts';

/** Native and ERC-20 transfers, prepared only (SPEC "Direct execution"); nothing is signed here. */

export interface TransferInput {
  chainId?: string | number;
  network?: string | number;
  recipientAddress: string;
  amount: string | number;
  tokenAddress?: string;
  tokenConfig?: string | Record<string, unknown>;
  gasLimitMultiplier?: string | number;
  simulate?: boolean;
}

/**
 * The token's decimals as the chain reports them. A configured value is
 * used only when the token cannot be read, and refused when it disagrees:
 * a wrong value would scale the amount by a power of ten.
 */
async function tokenDecimals(services: Services, chainId: number, token: Address, configured?: number): Promise<number> {
  let onChain: number | undefined;
  try {
    onChain = await services.chainClients.publicClient(chainId).readContract({ address: token, abi: erc20Abi, functionName: 'decimals' });
  } catch (error) {
    if (isRpcUnreachable(error)) throw rpcUnavailable({ name: services.chains.get(chainId)?.name ?? `chain ${chainId}`, chainId }, 'nothing was read or sent');
    onChain = services.stablecoins.lookup(chainId, token)?.decimals;
  }
  if (onChain !== undefined && configured !== undefined && configured !== onChain) {
    throw badRequest(
      'token_decimals_mismatch',
      `tokenConfig.decimals is ${configured} but token ${token} has ${onChain} decimals on chain ${chainId}; fix or omit tokenConfig.decimals.`,
      { tokenAddress: token, configured, onChain },
    );
  }
  const decimals = onChain ?? configured;
  if (decimals === undefined) {
    throw badRequest(
      'token_decimals_unknown',
      `Could not read decimals() from token ${token} on chain ${chainId}; pass tokenConfig {"decimals": N, "symbol": "..."}.`,
      { tokenAddress: token },
    );
  }
  return decimals;
}

export async function prepareTransfer(services: Services, input: TransferInput): Promise<{ write: PreparedWrite }> {
  const chain = selectChain(services, input.chainId, input.network);
  const recipient = parseEvmAddress(input.recipientAddress, 'recipientAddress', 'recipient address');
  const tokenConfig = parseTokenConfig(input.tokenConfig);
  const gasLimitMultiplier = parseGasLimitMultiplier(input.gasLimitMultiplier);
  const tokenRef = input.tokenAddress ?? tokenConfig.address;
  if (!tokenRef) {
    const value = parseAmount(input.amount, 18);
    if (value === 0n) throw badRequest('invalid_amount', 'amount must be greater than 0.', { field: 'amount' });
    return {
      write: {
        type: 'transfer',
        chain,
        request: { to: recipient, value },
        gasLimitMultiplier,
        result: { recipientAddress: recipient, amount: String(input.amount), token: null },
      },
    };
  }
  const token = parseEvmAddress(tokenRef, 'tokenAddress', 'token address');
  const decimals = await tokenDecimals(services, chain.chainId, token, tokenConfig.decimals);
  const raw = parseAmount(input.amount, decimals);
  if (raw === 0n) throw badRequest('invalid_amount', 'amount must be greater than 0.', { field: 'amount' });
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [recipient, raw] });
  const symbol = tokenConfig.symbol ?? services.stablecoins.lookup(chain.chainId, token)?.symbol ?? null;
  return {
    write: {
      type: 'transfer',
      chain,
      request: { to: token, data, value: 0n },
      abi: erc20Abi,
      gasLimitMultiplier,
      result: { recipientAddress: recipient, amount: String(input.amount), token, symbol, decimals, amountRaw: raw.toString() },
    },
  };
}
