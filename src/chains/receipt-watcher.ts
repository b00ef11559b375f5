import { BaseError, TransactionReceiptNotFoundError, WaitForTransactionReceiptTimeoutError, type Hex, type PublicClient, type TransactionReceipt } from 'viem';

/**
 * Waits for receipts with one block-number poller per chain client, running
 * only while someone waits. Each new block re-reads every waiting receipt at
 * once (concurrent calls on the client's kept-alive sockets), so a wait never
 * sits behind another's polling interval, and many waits cost the node one
 * `eth_blockNumber` per tick instead of one poller each.
 */

const POLL_MS = 100;
/** Receipts are re-read at least this often even without a new block (a node that indexes a block after announcing it). */
const RECHECK_MS = 1_000;

interface Waiter {
  hash: Hex;
  resolve(receipt: TransactionReceipt): void;
  reject(error: unknown): void;
}

interface Watcher {
  waiters: Set<Waiter>;
  running: boolean;
}

const watchers = new WeakMap<PublicClient, Watcher>();

const isNotFound = (error: unknown) =>
  error instanceof TransactionReceiptNotFoundError || (error instanceof BaseError && Boolean(error.walk((e) => e instanceof TransactionReceiptNotFoundError)));

/** One receipt read: found resolves; not yet mined waits on; any other answer ends the wait when `final`. */
async function check(client: PublicClient, waiter: Waiter, final: boolean): Promise<void> {
  try {
    waiter.resolve(await client.getTransactionReceipt({ hash: waiter.hash }));
  } catch (error) {
    if (final && !isNotFound(error)) waiter.reject(error);
  }
}

async function poll(client: PublicClient, watcher: Watcher): Promise<void> {
  let seen: bigint | undefined;
  let checkedAt = Date.now();
  let recheck = false;
  while (watcher.waiters.size > 0) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    // Every wait ended during the sleep (most receipts are found by the first read): no tick to pay for.
    if (watcher.waiters.size === 0) break;
    try {
      const block = await client.getBlockNumber({ cacheTime: 0 });
      const fresh = block !== seen;
      seen = block;
      // Once more on the tick after a new block, in case its receipts were not readable yet.
      if (fresh || recheck || Date.now() - checkedAt >= RECHECK_MS) {
        checkedAt = Date.now();
        await Promise.all([...watcher.waiters].map((waiter) => check(client, waiter, true)));
      }
      recheck = fresh;
    } catch {
      // The node did not answer this tick: keep polling until each wait's own timeout.
    }
  }
  watcher.running = false;
}

/**
 * Right after the broadcast, then twice more soon after: a node that mines on arrival (anvil) answers the
 * broadcast a moment before the receipt is readable, and the next block tick is up to POLL_MS away.
 */
const FIRST_CHECKS_MS = [0, 3, 10];

async function firstChecks(client: PublicClient, watcher: Watcher, waiter: Waiter): Promise<void> {
  for (const delay of FIRST_CHECKS_MS) {
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    if (!watcher.waiters.has(waiter)) return;
    await check(client, waiter, false);
  }
}

/** The receipt of `hash`; rejects with WaitForTransactionReceiptTimeoutError after `timeoutMs`. */
export function waitForReceipt(client: PublicClient, hash: Hex, timeoutMs: number): Promise<TransactionReceipt> {
  let watcher = watchers.get(client);
  if (!watcher) watchers.set(client, (watcher = { waiters: new Set(), running: false }));
  const w = watcher;
  return new Promise<TransactionReceipt>((resolve, reject) => {
    const end = () => {
      clearTimeout(timer);
      w.waiters.delete(waiter);
    };
    const waiter: Waiter = {
      hash,
      resolve: (receipt) => (end(), resolve(receipt)),
      reject: (error) => (end(), reject(error)),
    };
    const timer = setTimeout(() => waiter.reject(new WaitForTransactionReceiptTimeoutError({ hash })), timeoutMs);
    w.waiters.add(waiter);
    void firstChecks(client, w, waiter);
    if (!w.running) {
      w.running = true;
      void poll(client, w);
    }
  });
}
