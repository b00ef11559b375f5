import type { Store } from './db.ts';
import { first, prepared } from './prepared.ts';

/** The counter tables triggers move in the writers' own transactions (migrations 029, 030, 031). */
export type VersionCounter = 'listings_version' | 'public_tags_version' | 'public_workflows_version';

/**
 * A value built from rows that every anonymous client may read whole, kept per
 * store while the counter that triggers move on every change to those rows
 * stands still: each request reads one row instead of the whole set. A counter
 * moved in the writer's transaction is right for several PostgreSQL instances
 * too, where timestamps written by different clocks are not. The value is
 * shared by every later caller: `read` freezes it.
 */
export function versioned<T>(counter: VersionCounter, read: (store: Store) => Promise<T>): (store: Store) => Promise<{ version: number; value: T }> {
  const selectVersion = prepared<Record<string, never>, { version: number }>((db) => db.selectFrom(counter).select('version').where('id', '=', 1));
  type Entry = { version: number; value: T };
  const kept = new WeakMap<Store, Entry>();
  // The read under way, per store: requests that find the same new version wait for it instead of each reading the rows.
  const reading = new WeakMap<Store, { version: number; entry: Promise<Entry> }>();
  return async (store) => {
    // The version is read before the rows: rows newer than it only cost one more read next time, never a stale answer.
    const version = (await first(selectVersion, store, {}))?.version ?? 0;
    const entry = kept.get(store);
    if (entry?.version === version) return entry;
    const underWay = reading.get(store);
    if (underWay?.version === version) return underWay.entry;
    const fresh = read(store).then((value) => {
      const built = { version, value };
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
