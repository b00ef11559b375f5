import { BaseError, TransactionReceiptNotFoundError, WaitForTransactionReceiptTimeoutError, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import { healStuckSenders } from './stuck-pool.ts';
import { isAnvil } from './sync-broadcast.ts';

/**
 * Waits for receipts with one block-number poller per chain client, running
 * only while someone waits. A new block re-reads the receipts of the waits
 * whose transaction it holds (one read of each new block's transaction
 * hashes, or every wait's receipt when that is fewer reads), so a wait never
 * sits behind another's polling interval, and many waits cost the node one
 * `eth_blockNumber` per tick instead of one poller each. Ticks come sooner
 * right after a new block: a devnet that mines on arrival makes a block per
 * transaction, and a chain of slow blocks pays a few extra block-number reads.
 * On anvil, waits that have lasted STUCK_AFTER_MS also look for a transaction
 * its pool holds for good, and heal it (src/chains/stuck-pool.ts).
 */

const POLL_MS = 100;
/** The tick after a new block; each tick without one doubles the wait, up to POLL_MS. */
const FAST_POLL_MS = 4;
/** Receipts are re-read at least this often even without a new block (a node that indexes a block after announcing it). */
const RECHECK_MS = 1_000;
/** On anvil, waits this old (a transaction normally mines in milliseconds there) look for a stuck pool, at most once this often per chain. */
const STUCK_AFTER_MS = 2_000;

interface Waiter {
  hash: Hex;
  since: number;
  resolve(receipt: TransactionReceipt): void;
  reject(error: unknown): void;
}

interface Watcher {
  waiters: Set<Waiter>;
  running: boolean;
  /** When waits last looked for a stuck pool, and whether that look is still under way. */
  stuckLookAt: number;
  stuckLook?: Promise<void>;
}

const watchers = new WeakMap<PublicClient, Watcher>();

const isNotFound = (error: unknown) =>
  error instanceof TransactionReceiptNotFoundError || (error instanceof BaseError && Boolean(error.walk((e) => e instanceof TransactionReceiptNotFoundError)));

/** One receipt read: found resolves (true); not yet mined waits on (false); any other answer ends the wait when `final`. */
async function check(client: PublicClient, waiter: Waiter, final: boolean): Promise<boolean> {
  try {
    waiter.resolve(await client.getTransactionReceipt({ hash: waiter.hash }));
    return true;
  } catch (error) {
    if (final && !isNotFound(error)) waiter.reject(error);
    return false;
  }
}

/**
 * The waits a move from block `seen` to `block` may have mined: those whose hash is in the new blocks,
 * or all of them when reading each wait's receipt takes fewer calls (or `seen` is unknown or ahead).
 */
async function minedSince(client: PublicClient, waiters: Set<Waiter>, seen: bigint | undefined, block: bigint): Promise<Waiter[]> {
  const all = [...waiters];
  if (seen === undefined || block <= seen || block - seen >= BigInt(all.length)) return all;
  const numbers = Array.from({ length: Number(block - seen) }, (_, i) => seen + 1n + BigInt(i));
  const blocks = await Promise.all(numbers.map((blockNumber) => client.getBlock({ blockNumber })));
  const hashes = new Set(blocks.flatMap((b) => b.transactions.map((h) => h.toLowerCase())));
  return all.filter((waiter) => hashes.has(waiter.hash.toLowerCase()));
}

async function poll(client: PublicClient, watcher: Watcher): Promise<void> {
  let seen: bigint | undefined;
  let checkedAt = Date.now();
  let interval = POLL_MS;
  // Waits a new block held whose receipt was not readable yet: read again on the next tick.
  let unread: Waiter[] = [];
  while (watcher.waiters.size > 0) {
    await new Promise((resolve) => setTimeout(resolve, interval));
    // Every wait ended during the sleep (most receipts are found by the first read): no tick to pay for.
    if (watcher.waiters.size === 0) break;
    try {
      const block = await client.getBlockNumber({ cacheTime: 0 });
      const fresh = block !== seen;
      let due: Waiter[];
      if (Date.now() - checkedAt >= RECHECK_MS) {
        checkedAt = Date.now();
        due = [...watcher.waiters];
      } else {
        due = fresh ? await minedSince(client, watcher.waiters, seen, block) : [];
        for (const waiter of unread) if (watcher.waiters.has(waiter) && !due.includes(waiter)) due.push(waiter);
      }
      seen = block;
      interval = fresh ? FAST_POLL_MS : Math.min(POLL_MS, interval * 2);
      const found = await Promise.all(due.map((waiter) => check(client, waiter, true)));
      lookForStuckPool(
        client,
        watcher,
        due.filter((waiter, i) => !found[i] && Date.now() - waiter.since >= STUCK_AFTER_MS),
      );
      // Only a new block's waits get one more read: a wait already read on the tick before stays for the next block.
      unread = fresh ? due.filter((_, i) => !found[i]) : [];
    } catch {
      // The node did not answer this tick: keep polling until each wait's own timeout.
      interval = Math.min(POLL_MS, interval * 2);
    }
  }
  watcher.running = false;
}

/** In the background: on anvil, heals the senders of `waits` its pool holds for good (src/chains/stuck-pool.ts). */
function lookForStuckPool(client: PublicClient, watcher: Watcher, waits: Waiter[]) {
  if (waits.length === 0 || watcher.stuckLook || Date.now() - watcher.stuckLookAt < STUCK_AFTER_MS) return;
  watcher.stuckLookAt = Date.now();
  watcher.stuckLook = (async () => {
    if (await isAnvil(client))
      await healStuckSenders(
        client,
        waits.map((waiter) => waiter.hash),
      );
  })()
    // The node did not answer: the next look tries again.
    .catch(() => {})
    .finally(() => (watcher.stuckLook = undefined));
}

/**
 * Right after the broadcast, then three more times soon after: a node that mines on arrival (anvil) answers
 * the broadcast a moment before the receipt is readable (about 1 ms here: with a first retry at 3 ms, a paid
 * call's settlement waited 2.4-2.5 ms for its receipt on average, 1.8-1.9 ms with one at 1 ms), and the next
 * block tick is up to POLL_MS away. On a chain with real block times this is one more read per send. (A node that
 * mines on arrival is sent sync broadcasts, answered with the receipt: src/chains/sync-broadcast.ts. These reads
 * serve every other wait.)
 */
const FIRST_CHECKS_MS = [0, 1, 3, 10];

async function firstChecks(client: PublicClient, watcher: Watcher, waiter: Waiter): Promise<void> {
  for (const delay of FIRST_CHECKS_MS) {
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    if (!watcher.waiters.has(waiter)) return;
    await check(client, waiter, false);
  }
}

/**
 * The receipt of `hash`; rejects with WaitForTransactionReceiptTimeoutError after `timeoutMs`, or with the
 * signal's reason once `signal` aborts (a wait nobody needs any more stops polling the node).
 */
export function waitForReceipt(client: PublicClient, hash: Hex, timeoutMs: number, signal?: AbortSignal): Promise<TransactionReceipt> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  let watcher = watchers.get(client);
  if (!watcher) watchers.set(client, (watcher = { waiters: new Set(), running: false, stuckLookAt: 0 }));
  const w = watcher;
  return new Promise<TransactionReceipt>((resolve, reject) => {
    const aborted = () => waiter.reject(signal!.reason);
    const end = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', aborted);
      w.waiters.delete(waiter);
    };
    const waiter: Waiter = {
      hash,
      since: Date.now(),
      resolve: (receipt) => (end(), resolve(receipt)),
      reject: (error) => (end(), reject(error)),
    };
    const timer = setTimeout(() => waiter.reject(new WaitForTransactionReceiptTimeoutError({ hash })), timeoutMs);
    signal?.addEventListener('abort', aborted, { once: true });
    w.waiters.add(waiter);
    void firstChecks(client, w, waiter);
    if (!w.running) {
      w.running = true;
      void poll(client, w);
    }
  });
}
