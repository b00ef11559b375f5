import type { Store } from './db.ts';
import { first, prepared } from './prepared.ts';

/** The counter tables triggers move in the writers' own transactions (migrations 029, 030, 031). */
export type VersionCounter = 'listings_version' | 'public_tags_version' | 'public_workflows_version';

/**
 * A rebuild that took at least COSTLY_MS of the process's CPU is not started again until SPACING times
 * its cost has passed (at most MAX_STALE_MS): meanwhile callers get the value kept. One tenant editing a
 * public workflow five times a second (its write budget) made every search rebuild, about 0.2 of a core
 * with 5,000 public workflows; spaced, rebuilds take at most a fifth of one core however many tenants
 * edit, and answers trail the rows by at most four rebuilds' time. A cheap rebuild is never put off, so
 * small deployments see every change on the next request.
 */
const COSTLY_MS = 20;
const SPACING = 4;
const MAX_STALE_MS = 2_000;
/**
 * A value of fewer items than this (its `size`) is rebuilt at every change, however long the rebuild took: the
 * CPU is the whole process's, so a slow or busy machine (the compiler's threads just after start, other work
 * interleaved with the read) can make a small set's rebuild look costly, and a tenant's change to it (a
 * workflow made private) would then be answered stale. Rebuilding 5,000 public summaries cost 86-100 ms of CPU;
 * 100 cost a fiftieth of that, cheap enough to repeat at every edit.
 */
const FEW_ITEMS = 100;

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * A value built from rows that every anonymous client may read whole, kept per
 * store while the counter that triggers move on every change to those rows
 * stands still: each request reads one row instead of the whole set. A counter
 * moved in the writer's transaction is right for several PostgreSQL instances
 * too, where timestamps written by different clocks are not. The value is
 * shared by every later caller: `read` freezes it.
 */
export function versioned<T>(
  counter: VersionCounter,
  read: (store: Store) => Promise<T>,
  /** How many items a value holds; with it, a value of fewer than FEW_ITEMS is never kept past a change. */
  size?: (value: T) => number,
): (store: Store) => Promise<{ version: number; value: T }> {
  const selectVersion = prepared<Record<string, never>, { version: number }>((db) => db.selectFrom(counter).select('version').where('id', '=', 1));
  type Entry = { version: number; value: T; builtAt: number; costMs: number };
  const kept = new WeakMap<Store, Entry>();
  // The read under way, per store: requests that find the same new version wait for it instead of each reading the rows.
  const reading = new WeakMap<Store, { version: number; entry: Promise<Entry> }>();
  return async (store) => {
    // The version is read before the rows: rows newer than it only cost one more read next time, never a stale answer
    // (beyond the spacing of costly rebuilds above).
    const version = (await first(selectVersion, store, {}))?.version ?? 0;
    const entry = kept.get(store);
    if (entry?.version === version) return entry;
    if (entry && entry.costMs >= COSTLY_MS && performance.now() - entry.builtAt < Math.min(entry.costMs * SPACING, MAX_STALE_MS)) return entry;
    const underWay = reading.get(store);
    if (underWay?.version === version) return underWay.entry;
    // CPU, not wall time: a read the scheduler merely paused (a busy machine) is not a costly one.
    const startedCpu = cpuMs();
    const fresh = read(store).then((value) => {
      const few = size !== undefined && size(value) < FEW_ITEMS;
      const built = { version, value, builtAt: performance.now(), costMs: few ? 0 : cpuMs() - startedCpu };
      // A slower read of an older version does not replace a newer one.
      if ((kept.get(store)?.version ?? -1) < version) kept.set(store, built);
      return built;
    });
    reading.set(store, { version, entry: fresh });
    const forget = () => reading.get(store)?.entry === fresh && reading.delete(store);
    fresh.then(forget, forget);
    return fresh;
  };
}
