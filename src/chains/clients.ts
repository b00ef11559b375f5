import { createPublicClient, type Chain, type PublicClient } from 'viem';
import { ServiceError } from '../errors.ts';
import type { ChainCatalog, ChainEntry } from './catalog.ts';
import { rpcTransport } from './rpc-transport.ts';

/**
 * viem clients per catalog chain. The RPC URL is read from the catalog on
 * each lookup (the devnet sets it after start-up) and a client is rebuilt
 * only when it changes. RPC URLs stay inside this module's clients.
 */

export interface ChainClients {
  publicClient(chainId: number): PublicClient;
  viemChain(chainId: number): Chain;
}

const RPC_TIMEOUT_MS = 15_000;

export function viemChainOf(entry: ChainEntry, rpcUrl: string): Chain {
  return {
    id: entry.chainId,
    name: entry.name,
    nativeCurrency: { name: entry.symbol, symbol: entry.symbol, decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    ...(entry.explorerUrl ? { blockExplorers: { default: { name: entry.name, url: entry.explorerUrl } } } : {}),
  };
}

export function createChainClients(catalog: ChainCatalog): ChainClients {
  const cache = new Map<number, { url: string; chain: Chain; client: PublicClient }>();

  const entryFor = (chainId: number) => {
    const entry = catalog.get(chainId);
    const url = catalog.rpcUrl(chainId);
    if (!entry || !url || entry.chainType !== 'evm') {
      throw new ServiceError(400, 'unsupported_chain', `Chain ${chainId} is not an EVM chain this gateway can reach.`);
    }
    let cached = cache.get(chainId);
    if (!cached || cached.url !== url) {
      const chain = viemChainOf(entry, url);
      const client = createPublicClient({ chain, transport: rpcTransport(url, { timeout: RPC_TIMEOUT_MS, retryCount: 1 }) }) as PublicClient;
      cached = { url, chain, client };
      cache.set(chainId, cached);
    }
    return cached;
  };

  return {
    publicClient: (chainId) => entryFor(chainId).client,
    viemChain: (chainId) => entryFor(chainId).chain,
  };
}
