import type { Address, PublicClient } from 'viem';

/**
 * Nonces per (chain, address), assigned in this process. The first send from
 * a wallet reads the node's pending transaction count; later ones count on
 * locally, so sends from one wallet sign and store their bytes concurrently.
 * Only the broadcasts go out in nonce order, each once the previous one was
 * answered (never after its receipt). A nonce whose bytes the node refused is
 * handed to the next send in line, which re-signs for it: a refusal never
 * leaves a gap that stalls the sends behind it. A broadcast whose fate is
 * unknown, a nonce the node calls taken, or a sent transaction that was not
 * found or not mined in time (the node may have dropped it) makes the next
 * send re-read the pending count. This is the single-process manager (SQLite);
 * instances sharing a PostgreSQL database allocate in it instead
 * (shared-nonces.ts), with the same interface.
 */

/** sent: accepted (or already known); rejected: refused outright, nonce unused; uncertain: may have reached the node; nonce_conflict: the node says the nonce is taken or out of line. */
export type BroadcastResult = 'sent' | 'rejected' | 'uncertain' | 'nonce_conflict';

export interface NonceSend<S> {
  /** Signs (and stores) the transaction for `nonce`. */
  sign(nonce: number): Promise<S>;
  /** Sends signed bytes; classifies the answer instead of throwing. */
  broadcast(signed: S): Promise<BroadcastResult>;
  /**
   * True when a second `sign` replaces the first's stored bytes (which never
   * left the process): then signing starts before this send's turn, with the
   * predicted nonce, and a nonce conflict is retried once with a fresh count.
   * False: sign is called exactly once, at the turn, for the node's pending
   * count read then.
   */
  replaceable: boolean;
  /**
   * Signs and sends, for `nonce`, a transaction that moves nothing (a
   * zero-value transfer to the sender itself). The shared manager uses it to
   * fill a nonce this send leaves unused while later nonces are already out,
   * which would otherwise wait behind it until another send comes.
   */
  fill?(nonce: number): Promise<BroadcastResult>;
}

export interface NonceManager {
  send<S>(client: PublicClient, address: Address, op: NonceSend<S>): Promise<{ signed: S; result: BroadcastResult; nonce: number }>;
  /** A sent transaction was not found or not mined in time (the node may have dropped it): the next send re-reads the pending count. */
  resync(client: PublicClient, address: Address): void;
}

interface WalletNonces {
  /** The nonce of ticket `turn` (the send whose turn it is, or the next one); undefined until read from the node. */
  next?: number;
  /** The next send must re-read the pending count first. */
  stale: boolean;
  /** Tickets issued, and tickets whose turn is over. */
  issued: number;
  turn: number;
  /** Resolves when the last issued ticket's turn is over. */
  tail: Promise<void>;
}

/** A promise that never rejects: the outcome, read later. */
const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

export function createNonceManager(): NonceManager {
  const wallets = new Map<string, WalletNonces>();

  const keyOf = (client: PublicClient, address: Address) => `${client.chain!.id}:${address.toLowerCase()}`;

  return {
    resync(client, address) {
      const wallet = wallets.get(keyOf(client, address));
      if (wallet) wallet.stale = true;
    },
    async send<S>(client: PublicClient, address: Address, op: NonceSend<S>) {
      const key = keyOf(client, address);
      let w = wallets.get(key);
      if (!w) wallets.set(key, (w = { stale: true, issued: 0, turn: 0, tail: Promise.resolve() }));
      const wallet = w;

      const ticket = wallet.issued++;
      const previous = wallet.tail;
      let over!: () => void;
      wallet.tail = new Promise<void>((resolve) => (over = resolve));

      const predicted = op.replaceable && !wallet.stale && wallet.next !== undefined ? wallet.next + (ticket - wallet.turn) : undefined;
      // Signed and stored while the sends ahead broadcast.
      const early = predicted === undefined ? undefined : settled(op.sign(predicted));
      try {
        await previous;
        const sync = async () => {
          wallet.next = await client.getTransactionCount({ address, blockTag: 'pending' });
          wallet.stale = false;
          return wallet.next;
        };
        // A send that cannot re-sign reads the count at its turn (as every send did before): another
        // process sending from this wallet costs it nothing more than it did then.
        let nonce = wallet.stale || wallet.next === undefined || !op.replaceable ? await sync() : wallet.next;
        let signed: S;
        const pre = early && (await early);
        if (pre && !pre.ok) throw pre.error;
        // A send ahead was refused (its nonce is ours now) or the count was re-read: the early bytes are replaced.
        signed = pre && predicted === nonce ? pre.value : await op.sign(nonce);
        let result = await op.broadcast(signed);
        if (result === 'nonce_conflict') {
          wallet.stale = true;
          if (op.replaceable) {
            nonce = await sync();
            signed = await op.sign(nonce);
            result = await op.broadcast(signed);
          }
        }
        if (result === 'sent' || result === 'uncertain') wallet.next = nonce + 1;
        if (result === 'uncertain' || result === 'nonce_conflict') wallet.stale = true;
        return { signed, result, nonce };
      } catch (error) {
        // Nothing broadcast by this send (sign, store or the count read failed): the next in line re-reads the count.
        wallet.stale = true;
        await early;
        throw error;
      } finally {
        wallet.turn++;
        over();
      }
    },
  };
}
