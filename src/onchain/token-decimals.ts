import { erc20Abi, type Address } from 'viem';
import { isRpcUnreachable, rpcUnavailable } from '../chains/rpc-errors.ts';
import { badRequest } from '../errors.ts';
import type { Services } from '../services.ts';

/**
 * An ERC-20's decimals, the one check behind every token amount (direct
 * transfers and web3 steps): the token's own decimals() wins, then the
 * stablecoin registry, then `tokenConfig.decimals`. A configured value that
 * disagrees is refused, since it would scale the amount by a power of ten; an
 * RPC that cannot be reached is a 503, never a guess.
 */
export async function tokenDecimals(
  services: Pick<Services, 'chainClients' | 'stablecoins'>,
  chain: { name: string; chainId: number },
  token: Address,
  configured: number | undefined,
): Promise<number> {
  let onChain: number | undefined;
  let fromChain = true;
  try {
    onChain = await services.chainClients.publicClient(chain.chainId).readContract({ address: token, abi: erc20Abi, functionName: 'decimals' });
  } catch (error) {
    if (isRpcUnreachable(error)) throw rpcUnavailable(chain, 'nothing was read or sent');
    onChain = services.stablecoins.lookup(chain.chainId, token)?.decimals;
    fromChain = false;
  }
  if (onChain !== undefined && configured !== undefined && configured !== onChain) {
    throw badRequest(
      'token_decimals_mismatch',
      `tokenConfig.decimals is ${configured} but token ${token} ${fromChain ? `reports decimals() = ${onChain}` : `is listed with ${onChain} decimals`} on chain ${chain.chainId}; fix or omit tokenConfig.decimals.`,
      { field: 'tokenConfig.decimals', received: configured, tokenAddress: token, configured, onChain },
    );
  }
  const decimals = onChain ?? configured;
  if (decimals === undefined) {
    throw badRequest(
      'token_decimals_unknown',
      `Could not read decimals() from token ${token} on chain ${chain.chainId}; add "decimals" to tokenConfig, e.g. {"decimals": 6, "symbol": "USDC"}.`,
      { field: 'tokenConfig', tokenAddress: token },
    );
  }
  return decimals;
}
