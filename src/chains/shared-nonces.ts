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
 * transfer). Only when that too is refused is the nonce freed. Some gaps
 * have nobody to fill them: an instance that died between allocating and
 * broadcasting, a broadcast marked sent that never reached the node, a fill
 * refused. Each instance whose send went out checks the node's count once the
 * grace has passed and fills a gap below its send (`scheduleHeal`), so the
 * sends behind it are mined without waiting for another send to come.
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

/** A heal looks again (a nonce still in its grace, a refused fill, a node or store that failed) until this many attempts in all. */
const HEAL_ATTEMPTS = 6;

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
   * In one store transaction: takes over `nonce`, which the node lacks (its pending count), so no other
   * instance fills or sends it too, when nobody is at work on it: no row, a `free` one, or one left in its
   * state past the grace (allocated by an instance that died, or marked sent yet never reaching the node).
   * Otherwise answers when its row's grace runs out.
   */
  const claimGap = (chainId: number, address: string, nonce: number) =>
    store.transaction().execute(async (trx): Promise<{ claimed: true } | { claimed: false; retryAt: number }> => {
      const now = Date.now();
      const row = await trx
        .selectFrom('chain_nonces')
        .select(['state', 'at'])
        .where('chain_id', '=', chainId)
        .where('address', '=', address)
        .where('nonce', '=', nonce)
        .executeTakeFirst();
      if (row && row.state !== 'free' && Number(row.at) >= now - graceMs) return { claimed: false, retryAt: Number(row.at) + graceMs + HEAL_MARGIN_MS };
      await trx
        .insertInto('chain_nonces')
        .values({ chain_id: chainId, address, nonce, state: 'allocated', at: now })
        .onConflict((oc) => oc.columns(['chain_id', 'address', 'nonce']).doUpdateSet({ state: 'allocated', at: now }))
        .execute();
      return { claimed: true };
    });

  /**
   * Fills `nonce` with a transaction that moves nothing (NonceSend.fill), because later nonces may wait behind
   * it. Refused (or no fill), the nonce is freed for the next send. `why` ends the log line. Answers whether
   * the fill went out.
   */
  async function fillGap(
    wallet: WalletState,
    chainId: number,
    from: Address,
    nonce: number,
    fill: ((nonce: number) => Promise<BroadcastResult>) | undefined,
    why: string,
  ): Promise<boolean> {
    const address = from.toLowerCase();
    let refusal = fill ? 'the node refused it' : 'no transaction can fill it';
    const filled = fill
      ? await fill(nonce).catch((error: unknown): BroadcastResult => {
          refusal = (error as Error).message;
          return 'rejected';
        })
      : 'rejected';
    if (filled === 'rejected') {
      wallet.stale = true;
      console.error(`[flowgate] could not fill nonce ${nonce} of ${from} on chain ${chainId} (${refusal.split('\n')[0]}); freed for the next send`);
      await mark(chainId, address, nonce, 'free').catch(() => {});
      return false;
    }
    console.error(`[flowgate] nonce ${nonce} of ${from} on chain ${chainId} filled with a zero-value transfer to itself: ${why}`);
    // The fill is out whatever the store says now: a row left `allocated` is taken over after the grace, and the node's count decides.
    const noted = await mark(chainId, address, nonce, 'sent').then(
      () => true,
      () => false,
    );
    if (!noted || filled !== 'sent') wallet.stale = true;
    return true;
  }

  /** One heal timer per wallet (the earliest due wins; every send raises its bound); cleared when the gateway stops. */
  const heals = new Map<string, { due: number; below: number; failures: number; timer: NodeJS.Timeout }>();
  let closed = false;

  /**
   * A send just went out at `sent.nonce`. Should the node hold it behind a nonce nobody will send (another
   * instance died between allocating and broadcasting; a broadcast marked sent never reached the node; a
   * nonce was freed after its fill was refused), it would wait there, and every later send with it, until
   * some other send came past the grace to take that nonce over: a wallet that goes quiet would wait for
   * good, and these sends' receipts would time out. So once the grace of what it may wait behind has passed
   * (`sent.watch`, the latest allocation it saw unanswered, else the send itself), this instance reads the
   * node's count: while it is below the send, the nonce at the count is claimed (claimGap) and filled with a
   * transaction that moves nothing (NonceSend.fill), as a send that gives up its own nonce does. A nonce
   * still in its grace is looked at again when the grace ends, a refused fill or a failed read a grace
   * later, up to HEAL_ATTEMPTS attempts in all. A nonce whose instance was only slow has its bytes
   * refused or replaced, as with any takeover (see above). On a wallet with no gap this costs one count
   * read per grace period at most.
   */
  function scheduleHeal(
    wallet: WalletState,
    key: string,
    client: PublicClient,
    from: Address,
    sent: { nonce: number; watch?: number; fill: (nonce: number) => Promise<BroadcastResult> },
    retry?: { due: number; failures: number },
  ) {
    if (closed) return;
    const due = retry?.due ?? (sent.watch ?? Date.now()) + graceMs + HEAL_MARGIN_MS;
    const failures = retry?.failures ?? 0;
    const scheduled = heals.get(key);
    const below = Math.max(sent.nonce + 1, scheduled?.below ?? 0);
    if (scheduled && scheduled.due <= due) {
      scheduled.below = below;
      return;
    }
    if (scheduled) clearTimeout(scheduled.timer);
    const chainId = client.chain!.id;
    const address = from.toLowerCase();
    /** Looks again at `at`: counted as an attempt, so a gap no attempt can fill is left to the next send. */
    const again = (entry: { below: number; failures: number }, at: number) => {
      if (entry.failures + 1 >= HEAL_ATTEMPTS) {
        // The next send past the grace takes the nonce over instead (allocate).
        console.error(`[flowgate] gave up filling the nonces ${from} waits behind on chain ${chainId} after ${HEAL_ATTEMPTS} attempts`);
        return;
      }
      scheduleHeal(wallet, key, client, from, { ...sent, nonce: entry.below - 1 }, { due: at, failures: entry.failures + 1 });
    };
    const heal = async (entry: { below: number; failures: number }) => {
      for (;;) {
        if (closed) return;
        const pending = await client.getTransactionCount({ address: from, blockTag: 'pending' });
        // Nothing this instance sent waits behind a gap.
        if (pending >= entry.below) return;
        const claim = await claimGap(chainId, address, pending);
        if (!claim.claimed) return again(entry, claim.retryAt);
        if (closed) return;
        const filled = await fillGap(wallet, chainId, from, pending, sent.fill, `nobody had sent it ${graceMs} ms later, and later nonces waited behind it`);
        if (!filled) return again(entry, Date.now() + graceMs);
      }
    };
    const timer = setTimeout(
      () => {
        const entry = heals.get(key) ?? { below, failures };
        heals.delete(key);
        heal(entry).catch((error: unknown) => {
          // The node or the store failed: tried again a grace later.
          wallet.stale = true;
          if (closed) return;
          console.error(`[flowgate] could not fill the nonces ${from} waits behind on chain ${chainId}: ${(error as Error).message}`);
          again(entry, Date.now() + graceMs);
        });
      },
      Math.max(0, due - Date.now()),
    );
    timer.unref();
    heals.set(key, { due, below, failures, timer });
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
        const filled = await fillGap(
          wallet,
          chainId,
          from,
          nonce,
          op.fill,
          'its own send was refused or failed before the broadcast, and later nonces were already allocated',
        );
        // The fill went out: it may wait behind another nonce, as the send would have.
        if (filled && op.fill) scheduleHeal(wallet, key, client, from, { nonce, watch, fill: op.fill });
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
        if (op.fill && result !== 'nonce_conflict') scheduleHeal(wallet, key, client, from, { nonce, watch, fill: op.fill });
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
