import { encodeFunctionData, erc20Abi } from 'viem';
import { badRequest } from '../errors.ts';
import type { Services } from '../services.ts';
import { selectChain } from './chain.ts';
import { parseAmount, parseEvmAddress, parseGasLimitMultiplier, parseTokenConfig } from './money-inputs.ts';
import type { PreparedWrite } from './prepared-write.ts';
import { tokenDecimals } from './token-decimals.ts';

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
  const decimals = await tokenDecimals(services, chain, token, tokenConfig.decimals);
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
