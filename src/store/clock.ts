/**
 * The time instances sharing a database agree on. Rows carry times one
 * instance wrote and another compares (a run's lease, a schedule's next
 * occurrence, an idempotency key's or a pending execution's age), so an
 * instance whose clock is minutes off would reap another's live runs, fire
 * schedules early, or take live requests for dead ones. On PostgreSQL every
 * instance follows the database server's clock (followDatabaseClock, in
 * src/store/postgres.ts); on SQLite, one machine's clock, the offset is 0.
 * Durations measured within one process keep Date.now().
 */

let offsetMs = 0;

/** Epoch ms on the shared clock. */
export const sharedNow = (): number => Date.now() + offsetMs;

/**
 * Below this, clocks are taken to agree (time sync keeps hosts within milliseconds, and a reading is only as exact as
 * half its round trip): the offset stays 0, so a process on one machine with its database keeps exactly its own clock.
 */
const AGREEING_WITHIN_MS = 1_000;

/** The shared clock's offset from this process's, from a reading of the database's clock: 0 while they agree. */
export function setSharedClockOffset(ms: number): void {
  offsetMs = Math.abs(ms) < AGREEING_WITHIN_MS ? 0 : ms;
}
