import type { Block, PublicClient } from 'viem';

/**
 * Blocks read during one poll of one chain, fetched once however many
 * workflows need them (Block triggers want headers, native Transfer triggers
 * the transactions too).
 */
export interface BlockReader {
  header(blockNumber: number): Promise<Block>;
  withTransactions(blockNumber: number): Promise<Block<bigint, true>>;
}

export function createBlockReader(client: PublicClient): BlockReader {
  const headers = new Map<number, Promise<Block>>();
  const full = new Map<number, Promise<Block<bigint, true>>>();
  const once = <T>(cache: Map<number, Promise<T>>, n: number, load: () => Promise<T>): Promise<T> => {
    let hit = cache.get(n);
    if (!hit) {
      hit = load();
      // A failed read is retried by the next poll, not served from here.
      hit.catch(() => cache.delete(n));
      cache.set(n, hit);
    }
    return hit;
  };
  const withTransactions = (n: number) => once(full, n, () => client.getBlock({ blockNumber: BigInt(n), includeTransactions: true }));
  return {
    withTransactions,
    header: (n) => (full.has(n) ? (withTransactions(n) as Promise<Block>) : once(headers, n, () => client.getBlock({ blockNumber: BigInt(n) }))),
  };
}
