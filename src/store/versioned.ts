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
  const kept = new WeakMap<Store, { version: number; value: T }>();
  return async (store) => {
    // The version is read before the rows: rows newer than it only cost one more read next time, never a stale answer.
    const version = (await first(selectVersion, store, {}))?.version ?? 0;
    const entry = kept.get(store);
    if (entry?.version === version) return entry;
    const fresh = { version, value: await read(store) };
    // A slower read of an older version does not replace a newer one.
    if (!entry || entry.version < version) kept.set(store, fresh);
    return fresh;
  };
}
