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

/** The shared clock's offset from this process's: set from a reading of the database's clock. */
export function setSharedClockOffset(ms: number): void {
  offsetMs = ms;
}
