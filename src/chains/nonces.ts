import type { Address, PublicClient } from 'viem';

/**
 * Nonces per (chain, address). Sends for one sender are serialized through
 * a lock, and the next nonce is the larger of the chain's pending count and
 * the last one we used, so concurrent sends never collide. A send that never
 * reached the node hands its nonce back.
 */
export interface NonceManager {
  /** Runs `send` with the next nonce; `send` resolves true when the node accepted the transaction. */
  withNonce<T>(client: PublicClient, address: Address, send: (nonce: number) => Promise<{ accepted: boolean; value: T }>): Promise<T>;
}

export function createNonceManager(): NonceManager {
  const next = new Map<string, number>();
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
        const pending = await client.getTransactionCount({ address, blockTag: 'pending' });
        const nonce = Math.max(pending, next.get(key) ?? 0);
        const { accepted, value } = await send(nonce);
        if (accepted) next.set(key, nonce + 1);
        return value;
      } finally {
        release();
        if (locks.get(key) === chained) locks.delete(key);
      }
    },
  };
}
