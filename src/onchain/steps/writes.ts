import { encodeFunctionData, erc20Abi } from 'viem';
import { prepareTransfer } from '../transfer.ts';
import { parseAmount, parseEvmAddress, parseGasLimitMultiplier } from '../money-inputs.ts';
import { chainOf, checkWriteRouting, tokenOf } from './config.ts';
import type { Web3Step } from './types.ts';

/**
 * Token and native-value writes, prepared only. Transfers reuse direct
 * execution's preparation (../transfer.ts) so the two paths parse amounts and recipients
 * identically; the stablecoin limit and the daily cap apply when sent.
 */

export const transferFunds: Web3Step = {
  kind: 'write',
  async prepare(config, env) {
    const chain = chainOf(env, config);
    checkWriteRouting(config, chain);
    const { write } = await prepareTransfer(env.services, {
      network: String(chain.chainId),
      recipientAddress: config.recipientAddress as string,
      amount: config.amount as string,
      gasLimitMultiplier: config.gasLimitMultiplier as string | undefined,
    });
    return write;
  },
};

export const transferToken: Web3Step = {
  kind: 'write',
  async prepare(config, env) {
    const chain = chainOf(env, config);
    checkWriteRouting(config, chain);
    const token = await tokenOf(env, chain, config);
    const { write } = await prepareTransfer(env.services, {
      network: String(chain.chainId),
      recipientAddress: config.recipientAddress as string,
      amount: config.amount as string,
      tokenAddress: token.address,
      tokenConfig: { decimals: token.decimals, symbol: token.symbol },
      gasLimitMultiplier: config.gasLimitMultiplier as string | undefined,
    });
    return write;
  },
};

export const approveToken: Web3Step = {
  kind: 'write',
  async prepare(config, env) {
    const chain = chainOf(env, config);
    checkWriteRouting(config, chain);
    const spender = parseEvmAddress(config.spenderAddress, 'spenderAddress');
    const token = await tokenOf(env, chain, config);
    // Zero is a valid approval: it revokes the spender.
    const raw = parseAmount(config.amount, token.decimals, 'amount');
    return {
      type: 'approve',
      chain,
      request: { to: token.address, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, raw] }), value: 0n },
      abi: erc20Abi,
      gasLimitMultiplier: parseGasLimitMultiplier(config.gasLimitMultiplier),
      result: {
        spenderAddress: spender,
        token: token.address,
        symbol: token.symbol,
        decimals: token.decimals,
        amount: String(config.amount).trim(),
        amountRaw: raw.toString(),
      },
    };
  },
};
