import { erc20Abi, formatEther, formatUnits } from 'viem';
import { parseEvmAddress } from '../money-inputs.ts';
import { chainOf, tokenOf } from './config.ts';
import type { Web3Step } from './types.ts';

/** Balance and allowance reads. Amounts are exact: raw integers and decimal strings, never floats. */

export const checkBalance: Web3Step = {
  kind: 'read',
  async read(config, env) {
    const chain = chainOf(env, config);
    const address = parseEvmAddress(config.address, 'address');
    const wei = await env.services.chainClients.publicClient(chain.chainId).getBalance({ address });
    return { balance: formatEther(wei), balanceWei: wei.toString(), address };
  },
};

export const checkTokenBalance: Web3Step = {
  kind: 'read',
  async read(config, env) {
    const chain = chainOf(env, config);
    const address = parseEvmAddress(config.address, 'address');
    const token = await tokenOf(env, chain, config);
    const raw = await env.services.chainClients
      .publicClient(chain.chainId)
      .readContract({ address: token.address, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
    return {
      balance: formatUnits(raw, token.decimals),
      balanceRaw: raw.toString(),
      symbol: token.symbol,
      decimals: token.decimals,
      address,
      tokenAddress: token.address,
    };
  },
};

export const checkAllowance: Web3Step = {
  kind: 'read',
  async read(config, env) {
    const chain = chainOf(env, config);
    const owner = parseEvmAddress(config.ownerAddress, 'ownerAddress');
    const spender = parseEvmAddress(config.spenderAddress, 'spenderAddress');
    const token = await tokenOf(env, chain, config);
    const raw = await env.services.chainClients
      .publicClient(chain.chainId)
      .readContract({ address: token.address, abi: erc20Abi, functionName: 'allowance', args: [owner, spender] });
    return {
      allowance: formatUnits(raw, token.decimals),
      allowanceRaw: raw.toString(),
      symbol: token.symbol,
      decimals: token.decimals,
      ownerAddress: owner,
      spenderAddress: spender,
      tokenAddress: token.address,
    };
  },
};
