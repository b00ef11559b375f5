import type { Store } from '../store/db.ts';
import { sharedNow } from '../store/clock.ts';
import { newId } from '../ids.ts';

/**
 * A sliding-window log: every counted request's time is kept (migration 034),
 * so any `windowMs` holds at most `limit` of them. A fixed window (the other
 * limits' counters) lets twice the limit through across a window's boundary;
 * the step-up retry budget is the one SPEC calls sliding, and it is low-volume
 * (a few rows per user and action), so keeping each request costs nothing.
 * One transaction per decision: on PostgreSQL every transaction takes the
 * store's writer lock, so instances sharing the database decide in turn.
 */

export interface SlidingDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the oldest counted request leaves the window (a slot frees). */
  resetSeconds: number;
  /** The first refusal since the last counted request; later ones are not (what a refusal worth recording once is). */
  firstRefusal?: boolean;
}

export async function consumeSliding(store: Store, key: string, limit: number, windowMs: number, now = sharedNow()): Promise<SlidingDecision> {
  return store.transaction().execute(async (trx) => {
    const live = await trx
      .selectFrom('rate_limit_hits')
      .select(['hit_at', 'expire', 'refused'])
      .where('key', '=', key)
      .where('expire', '>', now)
      .orderBy('hit_at')
      .execute();
    const counted = live.filter((row) => row.refused === 0);
    const seconds = (ms: number) => Math.max(1, Math.ceil((ms - now) / 1000));
    if (counted.length < limit) {
      await trx
        .insertInto('rate_limit_hits')
        .values({ id: newId(), key, hit_at: now, expire: now + windowMs, refused: 0 })
        .execute();
      return { allowed: true, limit, remaining: limit - counted.length - 1, resetSeconds: seconds(counted[0]?.expire ?? now + windowMs) };
    }
    // Refused requests do not count (a client that keeps asking is not locked out for longer); one marker row per run
    // of refusals tells the next refusal it is not the first.
    const lastCounted = counted[counted.length - 1]!.hit_at;
    const firstRefusal = !live.some((row) => row.refused === 1 && row.hit_at >= lastCounted);
    if (firstRefusal)
      await trx
        .insertInto('rate_limit_hits')
        .values({ id: newId(), key, hit_at: now, expire: now + windowMs, refused: 1 })
        .execute();
    return { allowed: false, limit, remaining: 0, resetSeconds: seconds(counted[counted.length - limit]!.expire), firstRefusal };
  });
}

export async function resetSliding(store: Store, key: string): Promise<void> {
  await store.deleteFrom('rate_limit_hits').where('key', '=', key).execute();
}
