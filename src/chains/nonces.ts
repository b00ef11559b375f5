import type { Address, PublicClient } from 'viem';

/**
 * Nonces per (chain, address), assigned in this process. The first send from
 * a wallet reads the node's pending transaction count; later ones count on
 * locally, so sends from one wallet sign and store their bytes concurrently.
 * Only the broadcasts go out in nonce order, each once the previous one was
 * answered (never after its receipt). A send whose turn comes takes along the
 * sends behind it that are already signed for the nonces after its own: one
 * request to the node (NonceSend.broadcastGroup, a JSON-RPC batch) instead of
 * one round trip each, so a busy wallet's broadcasts keep up with a remote
 * node, and a devnet mining on arrival packs them into one block. A nonce
 * whose bytes the node refused is handed to the next send in line, which
 * re-signs for it; refused inside a group whose later nonces were accepted,
 * it is filled at once with a transaction that moves nothing (NonceSend.fill,
 * the gas of a plain transfer). Either way a refusal never leaves a gap that
 * stalls the sends behind it. A broadcast whose fate is
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
   * Sends several sends' signed bytes of this wallet in one request, in the order given (nonce order), and
   * classifies each answer. A send that has it takes along the later sends that have it too (see above).
   */
  broadcastGroup?(group: readonly S[]): Promise<BroadcastResult[]>;
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
   * zero-value transfer to the sender itself). The managers use it to fill a
   * nonce this send leaves unused while later nonces are already out, which
   * would otherwise wait behind it until another send comes.
   */
  fill?(nonce: number): Promise<BroadcastResult>;
}

export interface NonceManager {
  send<S>(client: PublicClient, address: Address, op: NonceSend<S>): Promise<{ signed: S; result: BroadcastResult; nonce: number }>;
  /** A sent transaction was not found or not mined in time (the node may have dropped it): the next send re-reads the pending count. */
  resync(client: PublicClient, address: Address): void;
  /** Stops background work (the shared manager's gap fills) before the store closes. */
  close?(): void;
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
  /** Tickets waiting for their turn that may join an earlier send's group: signing (or signed) early, for a predicted nonce. */
  joinable: Map<number, Joinable>;
}

type Outcome<S> = { signed: S; result: BroadcastResult; nonce: number };

interface Joinable {
  nonce: number;
  op: NonceSend<unknown>;
  /** Set once the early signing (and its store write) succeeded. */
  signed?: { value: unknown };
  /** Set by the send whose group took this one: its outcome, read when its own turn comes. */
  outcome?: { ok: true; value: Outcome<unknown> } | { ok: false; error: unknown };
}

/** At most this many broadcasts in one request (node providers cap batches; a few dozen is accepted everywhere). */
const MAX_GROUP = 20;

/** A promise that never rejects: the outcome, read later. */
const settled = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/**
 * After one request carried a group's broadcasts (nonces consecutive from the first): a send the node
 * calls out of line re-reads the count and tries once more alone, a refused nonce below an accepted one is
 * filled, and the wallet's next nonce follows the last one that may be out. Each member's outcome.
 */
async function settleGroup<S>(
  wallet: WalletNonces,
  sync: () => Promise<number>,
  group: { nonce: number; op: NonceSend<S>; signed: S; result: BroadcastResult }[],
): Promise<({ ok: true; value: Outcome<S> } | { ok: false; error: unknown })[]> {
  const out = (result: BroadcastResult) => result === 'sent' || result === 'uncertain';
  let lastOut = -1;
  for (const [i, m] of group.entries()) if (out(m.result)) lastOut = i;
  wallet.next = group[0]!.nonce + lastOut + 1;
  if (group.some((m) => m.result === 'uncertain' || m.result === 'nonce_conflict')) wallet.stale = true;
  const outcomes: ({ ok: true; value: Outcome<S> } | { ok: false; error: unknown })[] = [];
  for (const [i, m] of group.entries()) {
    try {
      if (m.result === 'rejected' && i < lastOut) {
        // Later nonces are out and would wait behind this one: filled, or (refused too) left to a re-read count.
        const filled = m.op.fill ? await m.op.fill(m.nonce).catch((): BroadcastResult => 'rejected') : 'rejected';
        if (filled === 'rejected') wallet.stale = true;
        else
          console.error(
            `[flowgate] nonce ${m.nonce} filled with a zero-value transfer to the wallet itself: the node refused its own transaction after later ones were accepted`,
          );
      }
      let { nonce, signed, result } = m;
      if (result === 'nonce_conflict' && m.op.replaceable) {
        nonce = await sync();
        signed = await m.op.sign(nonce);
        result = await m.op.broadcast(signed);
        if (out(result)) wallet.next = nonce + 1;
        if (result !== 'sent') wallet.stale = true;
      }
      outcomes.push({ ok: true, value: { signed, result, nonce } });
    } catch (error) {
      wallet.stale = true;
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
}

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
      if (!w) wallets.set(key, (w = { stale: true, issued: 0, turn: 0, tail: Promise.resolve(), joinable: new Map() }));
      const wallet = w;

      const ticket = wallet.issued++;
      const previous = wallet.tail;
      let over!: () => void;
      wallet.tail = new Promise<void>((resolve) => (over = resolve));

      const predicted = op.replaceable && !wallet.stale && wallet.next !== undefined ? wallet.next + (ticket - wallet.turn) : undefined;
      // Signed and stored while the sends ahead broadcast.
      const early = predicted === undefined ? undefined : settled(op.sign(predicted));
      let joinable: Joinable | undefined;
      if (early && op.broadcastGroup) {
        const entry: Joinable = (joinable = { nonce: predicted!, op: op as NonceSend<unknown> });
        wallet.joinable.set(ticket, entry);
        void early.then((r) => r.ok && (entry.signed = { value: r.value }));
      }
      const sync = async () => {
        wallet.next = await client.getTransactionCount({ address, blockTag: 'pending' });
        wallet.stale = false;
        return wallet.next;
      };
      /** True once this ticket's turn is counted in wallet.turn. */
      let counted = false;
      try {
        await previous;
        wallet.joinable.delete(ticket);
        // An earlier send's group carried this one: its outcome is known (and its turn already counted).
        if (joinable?.outcome) {
          counted = true;
          if (!joinable.outcome.ok) throw joinable.outcome.error;
          return joinable.outcome.value as Outcome<S>;
        }
        // A send that cannot re-sign reads the count at its turn (as every send did before): another
        // process sending from this wallet costs it nothing more than it did then.
        const nonce = wallet.stale || wallet.next === undefined || !op.replaceable ? await sync() : wallet.next;
        const pre = early && (await early);
        if (pre && !pre.ok) throw pre.error;
        // A send ahead was refused (its nonce is ours now) or the count was re-read: the early bytes are replaced.
        const signed = pre && predicted === nonce ? pre.value : await op.sign(nonce);

        // The sends behind, already signed for the nonces after ours, go out in the same request.
        const group: { nonce: number; op: NonceSend<S>; signed: S; entry?: Joinable }[] = [{ nonce, op, signed }];
        for (let next = ticket + 1; op.broadcastGroup && group.length < MAX_GROUP; next++) {
          const entry = wallet.joinable.get(next);
          if (!entry?.signed || entry.nonce !== nonce + group.length) break;
          wallet.joinable.delete(next);
          group.push({ nonce: entry.nonce, op: entry.op as NonceSend<S>, signed: entry.signed.value as S, entry });
        }
        let outcomes: Awaited<ReturnType<typeof settleGroup<S>>>;
        try {
          const results = group.length > 1 ? await op.broadcastGroup!(group.map((m) => m.signed)) : [await op.broadcast(signed)];
          outcomes = await settleGroup(
            wallet,
            sync,
            group.map((m, i) => ({ ...m, result: results[i]! })),
          );
        } catch (error) {
          // Their bytes may be out: every send of the group fails with it (each record keeps its stored hash for the chain to decide).
          outcomes = group.map(() => ({ ok: false as const, error }));
        }
        for (const [i, m] of group.entries()) if (m.entry) m.entry.outcome = outcomes[i]!;
        // The group's followers are past their turn: wallet.next is the nonce of ticket wallet.turn again.
        wallet.turn += group.length - 1;
        if (!outcomes[0]!.ok) throw outcomes[0]!.error;
        return outcomes[0]!.value;
      } catch (error) {
        // Signing, the store write, the count read or its group's broadcast failed: the next in line re-reads the count.
        wallet.stale = true;
        await early;
        throw error;
      } finally {
        if (!counted) wallet.turn++;
        over();
      }
    },
  };
}
