import type { Address, PublicClient } from 'viem';

/**
 * Nonces per (chain, address). Sends for one sender are serialized through a
 * lock, and each takes the node's pending transaction count after the
 * previous send was accepted into its mempool, so concurrent sends never
 * collide, and a transaction the node dropped leaves no gap behind it.
 * (One process signs for a wallet; several gateway processes sharing one
 * wallet would need the lock in the database.)
 */
export interface NonceManager {
  /** Runs `send` with the next nonce, holding the sender's lock until it returns. */
  withNonce<T>(client: PublicClient, address: Address, send: (nonce: number) => Promise<T>): Promise<T>;
}

export function createNonceManager(): NonceManager {
  const locks = new Map<string, Promise<unknown>>();

  return {
    async withNonce(client, address, send) {
      const key = `${client.chain!.id}:${address.toLowerCase()}`;
      const previous = locks.get(key) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => (release = resolve));
      const chained = previous.then(() => mine);
      locks.set(key, chained);
      await previous;
      try {
        return await send(await client.getTransactionCount({ address, blockTag: 'pending' }));
      } finally {
        release();
        if (locks.get(key) === chained) locks.delete(key);
      }
    },
  };
}
