import type { Address, PublicClient } from 'viem';
import type { Store } from '../store/db.ts';
import type { BroadcastResult, NonceManager, NonceSend } from './nonces.ts';

/**
 * Nonces per (chain, address) for several gateway instances on one PostgreSQL
 * database (README "PostgreSQL"): every instance signs for the organization
 * wallet, so the nonce is allocated in a store transaction (which holds the
 * store's writer lock, src/store/postgres.ts), never counted in one process.
 *
 * Allocation: the lowest `free` nonce (the node refused its bytes), else one
 * left `allocated` past NONCE_GRACE_MS (its instance died between allocating
 * and broadcasting), else max(node pending count, highest allocated + 1). Read
 * together with the node's count, a `sent` row at that count that was sent
 * before the count was asked for (the node dropped it), or a missing row
 * below higher ones, is reused too. So a gap is filled by the next send and
 * the chain does not stall behind it; reusing a nonce can never spend twice
 * (one transaction per nonce is mined), at worst an instance that was merely
 * slow finds its bytes replaced or refused, and its record ends failed. Rows
 * below the node's count are pruned.
 *
 * A send that leaves its nonce unused (its signing or store write failed, or
 * the node refused its bytes) frees it for the next send, unless later nonces
 * are already allocated: those may be out already and would wait behind the
 * gap until some send comes, so the gap is filled at once with a transaction
 * that moves nothing (NonceSend.fill; it costs the wallet the gas of a plain
 * transfer). Only when that too is refused is the nonce freed. An instance
 * that dies between allocating and broadcasting leaves such a gap with nobody
 * to fill it: an instance whose send went out above it fills it once the grace
 * has passed (`scheduleHeal`), so the sends behind it are mined without
 * waiting for another send to come.
 *
 * In the process, a wallet's sends still go one at a time in arrival order:
 * allocate, sign and store, broadcast, note the node's answer. (Unlike the
 * in-process manager, signing does not overlap the sends ahead: the nonce is
 * not known before the database hands it out.) The node's count is read on a
 * wallet's first send, after a resync or an unclear answer, when the table
 * holds nothing for the wallet, before reusing a row, and at most every
 * REFRESH_MS otherwise (to prune and to notice gaps).
 */

/** How long a nonce may stay allocated without a broadcast answer before another send takes it over. */
export const NONCE_GRACE_MS = 10_000;
/** The node's count is re-read at least this often per wallet (pruning, gap detection). */
const REFRESH_MS = 15_000;

/** A gap is filled this long after its allocation's grace ran out (so an answer arriving at the last moment is seen first). */
const HEAL_MARGIN_MS = 500;

/** Instances' clocks and the count's round trip: a `sent` row this much older than the count request was visible to the node. */
const CLOCK_MARGIN_MS = 1_000;

/**
 * `watch`: the latest time an allocation of this wallet (another instance's, below this one, in the usual
 * case) was made and not yet marked sent. Should that instance have died, this send waits behind the gap;
 * see `scheduleHeal`.
 */
type Allocation = { nonce: number; watch?: number } | { needCount: true };
/** The node's pending count, and when it was asked for. */
type Counted = { pending: number; askedAt: number };

interface WalletState {
  /** The next send must read the node's count. */
  stale: boolean;
  readAt: number;
  tail: Promise<void>;
}

export function createSharedNonceManager(store: Store, options: { graceMs?: number } = {}): NonceManager {
  const graceMs = options.graceMs ?? NONCE_GRACE_MS;
  const wallets = new Map<string, WalletState>();
  const keyOf = (chainId: number, address: string) => `${chainId}:${address}`;

  /** One store transaction: prune, then pick and claim a nonce; asks for the node's count when it cannot decide without it. */
  async function allocate(chainId: number, address: string, counted: Counted | undefined): Promise<Allocation> {
    const pending = counted?.pending;
    return store.transaction().execute(async (trx) => {
      const now = Date.now();
      const cutoff = now - graceMs;
      // A row marked `sent` before the count was asked for, yet not counted by the node: the node dropped it.
      const dropped = counted ? counted.askedAt - CLOCK_MARGIN_MS : 0;
      const rows = trx.selectFrom('chain_nonces').where('chain_id', '=', chainId).where('address', '=', address);
      if (pending !== undefined) {
        await trx.deleteFrom('chain_nonces').where('chain_id', '=', chainId).where('address', '=', address).where('nonce', '<', pending).execute();
      }
      // With the highest nonce, the latest allocation not yet answered: this send's `watch` (read here, not after the insert, to save a statement under the writer lock).
      const { highest, watch } = await rows
        .select((eb) => [eb.fn.max('nonce').as('highest'), eb.fn.max(eb.case().when('state', '=', 'allocated').then(eb.ref('at')).end()).as('watch')])
        .executeTakeFirstOrThrow();
      const reusable = await rows
        .select(['nonce', 'state'])
        .where((eb) =>
          eb.or([
            eb('state', '=', 'free'),
            eb.and([eb('state', '=', 'allocated'), eb('at', '<', cutoff)]),
            ...(pending === undefined
              ? []
              : [eb.and([eb('nonce', '=', pending), eb.or([eb('at', '<', cutoff), eb.and([eb('state', '=', 'sent'), eb('at', '<', dropped)])])])]),
          ]),
        )
        .orderBy('nonce')
        .limit(1)
        .executeTakeFirst();
      let nonce: number;
      if (highest === null || highest === undefined) {
        if (pending === undefined) return { needCount: true as const };
        nonce = pending;
      } else if (pending !== undefined && pending <= Number(highest) && !(await rows.select('nonce').where('nonce', '=', pending).executeTakeFirst())) {
        // Nothing recorded at the node's next nonce although higher ones are: a gap (the node dropped what it held).
        nonce = pending;
      } else if (reusable) {
        // Whether an abandoned allocation reached the node is only known from the node's count.
        if (reusable.state !== 'free' && pending === undefined) return { needCount: true as const };
        nonce = Number(reusable.nonce);
      } else {
        nonce = Math.max(Number(highest) + 1, pending ?? 0);
      }
      await trx
        .insertInto('chain_nonces')
        .values({ chain_id: chainId, address, nonce, state: 'allocated', at: now })
        .onConflict((oc) => oc.columns(['chain_id', 'address', 'nonce']).doUpdateSet({ state: 'allocated', at: now }))
        .execute();
      // An allocation above this nonce (or this row's own, if taken over) only makes the heal look later; it claims below `nonce` alone.
      return watch === null || watch === undefined ? { nonce } : { nonce, watch: Number(watch) };
    });
  }

  /**
   * In one store transaction: takes over the nonces below `below` still `allocated` past the grace that
   * the node does not hold (at or above its pending count), so no other instance fills them too.
   */
  const claimAbandoned = (chainId: number, address: string, below: number, pending: number) =>
    store.transaction().execute(async (trx) => {
      const now = Date.now();
      const abandoned = await trx
        .selectFrom('chain_nonces')
        .select('nonce')
        .where('chain_id', '=', chainId)
        .where('address', '=', address)
        .where('state', '=', 'allocated')
        .where('at', '<', now - graceMs)
        .where('nonce', '>=', pending)
        .where('nonce', '<', below)
        .orderBy('nonce')
        .execute();
      const nonces = abandoned.map((r) => Number(r.nonce));
      if (nonces.length > 0) {
        await trx
          .updateTable('chain_nonces')
          .set({ at: now })
          .where('chain_id', '=', chainId)
          .where('address', '=', address)
          .where('nonce', 'in', nonces)
          .execute();
      }
      return nonces;
    });

  /**
   * Fills `nonce` with a transaction that moves nothing (NonceSend.fill), because later nonces may wait behind
   * it. Refused (or no fill), the nonce is freed for the next send. `why` ends the log line.
   */
  async function fillGap(
    wallet: WalletState,
    chainId: number,
    from: Address,
    nonce: number,
    fill: ((nonce: number) => Promise<BroadcastResult>) | undefined,
    why: string,
  ): Promise<void> {
    const address = from.toLowerCase();
    const filled = fill ? await fill(nonce).catch((): BroadcastResult => 'rejected') : 'rejected';
    if (filled === 'rejected') {
      wallet.stale = true;
      await mark(chainId, address, nonce, 'free').catch(() => {});
      return;
    }
    console.error(`[flowgate] nonce ${nonce} of ${from} on chain ${chainId} filled with a zero-value transfer to itself: ${why}`);
    // The fill is out whatever the store says now: a row left `allocated` is taken over after the grace, and the node's count decides.
    const noted = await mark(chainId, address, nonce, 'sent').then(
      () => true,
      () => false,
    );
    if (!noted || filled !== 'sent') wallet.stale = true;
  }

  /** One heal timer per wallet (a later send moves it later and raises its bound); cleared when the gateway stops. */
  const heals = new Map<string, { due: number; below: number; timer: NodeJS.Timeout }>();
  let closed = false;

  /**
   * A send just went out above nonces another instance allocated and has not marked sent. Were that
   * instance dead, the node would hold this send (and every later one) behind the gap until some other
   * send came past the grace and took the abandoned nonce over: a wallet that goes quiet would wait for
   * good, and these sends' receipts would time out. So once the grace has passed, this instance fills
   * each such nonce the node still lacks with a transaction that moves nothing (NonceSend.fill), as a
   * send that gives up its own nonce does. A nonce whose instance was only slow has its bytes refused
   * or replaced, as with any takeover (see above).
   */
  function scheduleHeal(
    wallet: WalletState,
    key: string,
    client: PublicClient,
    from: Address,
    sent: { nonce: number; watch: number; fill: (nonce: number) => Promise<BroadcastResult> },
  ) {
    if (closed) return;
    const due = sent.watch + graceMs + HEAL_MARGIN_MS;
    const scheduled = heals.get(key);
    const below = Math.max(sent.nonce, scheduled?.below ?? 0);
    if (scheduled && scheduled.due >= due) {
      scheduled.below = below;
      return;
    }
    if (scheduled) clearTimeout(scheduled.timer);
    const chainId = client.chain!.id;
    const address = from.toLowerCase();
    const heal = async () => {
      const entry = heals.get(key);
      heals.delete(key);
      const pending = await client.getTransactionCount({ address: from, blockTag: 'pending' });
      for (const nonce of await claimAbandoned(chainId, address, entry?.below ?? below, pending)) {
        if (closed) return;
        await fillGap(
          wallet,
          chainId,
          from,
          nonce,
          sent.fill,
          `the instance that allocated it had not broadcast it ${graceMs} ms later, and later nonces waited behind it`,
        );
      }
    };
    const timer = setTimeout(
      () => {
        heal().catch((error: unknown) => {
          // The node or the store failed: the next send past the grace takes the abandoned nonce over instead.
          wallet.stale = true;
          if (!closed) console.error(`[flowgate] could not fill abandoned nonces of ${from} on chain ${chainId}: ${(error as Error).message}`);
        });
      },
      Math.max(0, due - Date.now()),
    );
    timer.unref();
    heals.set(key, { due, below, timer });
  }

  const mark = (chainId: number, address: string, nonce: number, state: 'sent' | 'free') =>
    store
      .updateTable('chain_nonces')
      .set({ state, at: Date.now() })
      .where('chain_id', '=', chainId)
      .where('address', '=', address)
      .where('nonce', '=', nonce)
      .execute();

  /** In one store transaction: frees `nonce` unless a later one is allocated (then it stays ours, to fill). */
  const freeUnlessLater = (chainId: number, address: string, nonce: number) =>
    store.transaction().execute(async (trx) => {
      const rows = trx.selectFrom('chain_nonces').where('chain_id', '=', chainId).where('address', '=', address);
      if (await rows.select('nonce').where('nonce', '>', nonce).limit(1).executeTakeFirst()) return false;
      await trx
        .updateTable('chain_nonces')
        .set({ state: 'free', at: Date.now() })
        .where('chain_id', '=', chainId)
        .where('address', '=', address)
        .where('nonce', '=', nonce)
        .execute();
      return true;
    });

  return {
    close() {
      closed = true;
      for (const { timer } of heals.values()) clearTimeout(timer);
      heals.clear();
    },
    resync(client, address) {
      const wallet = wallets.get(keyOf(client.chain!.id, address.toLowerCase()));
      if (wallet) wallet.stale = true;
    },
    async send<S>(client: PublicClient, from: Address, op: NonceSend<S>) {
      const chainId = client.chain!.id;
      const address = from.toLowerCase();
      const key = keyOf(chainId, address);
      let w = wallets.get(key);
      if (!w) wallets.set(key, (w = { stale: true, readAt: 0, tail: Promise.resolve() }));
      const wallet = w;
      const previous = wallet.tail;
      let over!: () => void;
      wallet.tail = new Promise<void>((resolve) => (over = resolve));

      const count = async () => {
        const askedAt = Date.now();
        const pending = await client.getTransactionCount({ address: from, blockTag: 'pending' });
        wallet.stale = false;
        wallet.readAt = Date.now();
        return { pending, askedAt };
      };
      let watch: number | undefined;
      const next = async (forceCount: boolean) => {
        let counted = forceCount || wallet.stale || Date.now() - wallet.readAt > REFRESH_MS ? await count() : undefined;
        for (;;) {
          const allocation = await allocate(chainId, address, counted);
          if ('nonce' in allocation) {
            watch = allocation.watch;
            return allocation.nonce;
          }
          counted = await count();
        }
      };
      /** This send leaves `nonce` unused: freed for the next send, or filled when later nonces are allocated (see above). */
      const giveUp = async (nonce: number) => {
        wallet.stale = true;
        // A store that cannot tell is taken as "later nonces may be out": a needless fill costs gas, a gap stalls the wallet.
        const freed = await freeUnlessLater(chainId, address, nonce).catch(() => false);
        if (freed) return;
        await fillGap(
          wallet,
          chainId,
          from,
          nonce,
          op.fill,
          'its own send was refused or failed before the broadcast, and later nonces were already allocated',
        );
        // The fill went out above any allocation this send saw pending: it may wait behind one, as the send would have.
        if (watch !== undefined && op.fill) scheduleHeal(wallet, key, client, from, { nonce, watch, fill: op.fill });
      };
      /** Signs for a freshly allocated nonce; a failure to sign or store gives the nonce up at once. */
      const signFor = async (nonce: number) => {
        try {
          return await op.sign(nonce);
        } catch (error) {
          await giveUp(nonce);
          throw error;
        }
      };
      const answer = async (nonce: number, result: BroadcastResult) => {
        // A refusal leaves the nonce unused. Anything else may occupy it.
        if (result === 'rejected') return giveUp(nonce);
        // The broadcast is done whatever the store says now: a row left `allocated` is taken over after the grace, and the node's count decides.
        const noted = await mark(chainId, address, nonce, 'sent').then(
          () => true,
          () => false,
        );
        if (!noted || result === 'uncertain' || result === 'nonce_conflict') wallet.stale = true;
        if (watch !== undefined && op.fill && result !== 'nonce_conflict') scheduleHeal(wallet, key, client, from, { nonce, watch, fill: op.fill });
      };

      try {
        await previous;
        let nonce = await next(false);
        let signed = await signFor(nonce);
        let result = await op.broadcast(signed);
        await answer(nonce, result);
        if (result === 'nonce_conflict' && op.replaceable) {
          // Taken behind our back (another sender, or an allocation thought abandoned): once more with the node's count.
          nonce = await next(true);
          signed = await signFor(nonce);
          result = await op.broadcast(signed);
          await answer(nonce, result);
        }
        return { signed, result, nonce };
      } catch (error) {
        wallet.stale = true;
        throw error;
      } finally {
        over();
      }
    },
  };
}
