import type { Store } from './db.ts';
import { isPostgres } from './dialect.ts';

/**
 * Group commit for the embedded SQLite store. Every commit costs far more
 * than the rows it writes (a WAL frame per page it dirtied, the lock), and
 * runs that overlap dirty the same pages (the tail of each index, the hour's
 * analytics rollup row); so writes queued in one turn of the event loop —
 * runs being started, finished and logged — are committed together, in one
 * transaction, in the order they were queued. Each caller's promise settles
 * only once its write is committed, so nothing that waits for a write (a
 * run's first step, an answer to a client) happens before it is durable.
 *
 * One write failing would roll back the others: the group is then retried
 * one write per transaction, so each fails or succeeds on its own, as if it
 * had never been grouped. PostgreSQL runs each write in its own transaction
 * at once (concurrent transactions on its pool already share its flushes).
 */

interface Job {
  work: (trx: Store) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface Group {
  queue: Job[];
  scheduled: boolean;
}

const groups = new WeakMap<Store, Group>();

/**
 * `write` after `alongside`, a write it must not be seen without: on SQLite one job of this turn's group commit; on
 * PostgreSQL one statement after the other, taking no turn of the writer lock (the caller recovers a stop between
 * them, as it would a stop just after both).
 */
export function writeAlongside<T>(store: Store, alongside: ((via: Store) => Promise<unknown>) | undefined, write: (via: Store) => Promise<T>): Promise<T> {
  const both = async (via: Store) => {
    await alongside?.(via);
    return write(via);
  };
  return isPostgres(store) ? both(store) : groupCommit(store, both);
}

/** Runs `work` in a transaction shared with the other writes queued in this turn of the event loop; settles once committed. */
export function groupCommit<T>(store: Store, work: (trx: Store) => Promise<T>): Promise<T> {
  if (isPostgres(store)) return store.transaction().execute(work);
  let group = groups.get(store);
  if (!group) groups.set(store, (group = { queue: [], scheduled: false }));
  const g = group;
  return new Promise<T>((resolve, reject) => {
    g.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
    if (g.scheduled) return;
    g.scheduled = true;
    setImmediate(() => void commitGroup(store, g));
  });
}

async function commitGroup(store: Store, group: Group): Promise<void> {
  const jobs = group.queue;
  group.queue = [];
  group.scheduled = false;
  if (jobs.length === 1) return settle(store, jobs[0]!);
  const results: unknown[] = [];
  try {
    await store.transaction().execute(async (trx) => {
      for (const job of jobs) results.push(await job.work(trx));
    });
  } catch {
    for (const job of jobs) await settle(store, job);
    return;
  }
  jobs.forEach((job, i) => job.resolve(results[i]));
}

/** One write in its own transaction. */
async function settle(store: Store, job: Job): Promise<void> {
  try {
    job.resolve(await store.transaction().execute(job.work));
  } catch (error) {
    job.reject(error);
  }
}
