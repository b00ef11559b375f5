import { sql } from 'kysely';
import { sharedNow } from '../store/clock.ts';
import type { Store } from '../store/db.ts';
import { utcDay } from './run-data-budget.ts';

/**
 * A triggered occurrence past its organization's bounds is written as a run
 * that ended at once (run-queue.ts, run-data-budget.ts), so its owner sees
 * why. But those rows had no bound of their own: a tenant whose queue stays
 * full, with Block triggers on a fast chain or many schedules, wrote one row
 * per occurrence for as long as it lasted (thousands a minute). So each
 * organization's day holds at most FLOWGATE_MAX_SKIPPED_RUNS_PER_ORG_PER_DAY
 * skipped runs, counted beside its run data (organization_run_data); later
 * skipped occurrences leave no row, and the gateway logs that once per
 * organization and day.
 */

/** Organizations whose day is full, by day: no more counting writes for them in this process. */
const fullDays = new WeakMap<Store, Map<string, string>>();

/** Counts one more skipped run of the organization today; false (nothing written) once the day holds `max`. */
export async function takeSkippedRunSlot(store: Store, organizationId: string, max: number, now = sharedNow()): Promise<boolean> {
  const day = utcDay(now);
  let full = fullDays.get(store);
  if (!full) fullDays.set(store, (full = new Map()));
  if (full.get(organizationId) === day) return false;
  const row = await store
    .insertInto('organization_run_data')
    .values({ organization_id: organizationId, day, chars: 0, skipped_runs: 1 })
    .onConflict((oc) => oc.columns(['organization_id', 'day']).doUpdateSet({ skipped_runs: sql`organization_run_data.skipped_runs + 1` }))
    .returning('skipped_runs')
    .executeTakeFirstOrThrow();
  if (Number(row.skipped_runs) <= max) return true;
  if (full.size > 10_000) full.clear();
  full.set(organizationId, day);
  console.error(
    `[flowgate] organization ${organizationId} has had ${max} triggered runs skipped today (FLOWGATE_MAX_SKIPPED_RUNS_PER_ORG_PER_DAY); its later skipped occurrences leave no run until 00:00 UTC`,
  );
  return false;
}

/**
 * Gives back a slot taken for an occurrence another process wrote first (the unique occurrence key refused this
 * one): with several instances on one database, every instance took a slot for the same occurrence, and the day's
 * bound filled as many times faster.
 */
export async function returnSkippedRunSlot(store: Store, organizationId: string, now = sharedNow()): Promise<void> {
  await store
    .updateTable('organization_run_data')
    .set({ skipped_runs: sql`organization_run_data.skipped_runs - 1` })
    .where('organization_id', '=', organizationId)
    .where('day', '=', utcDay(now))
    .where('skipped_runs', '>', 0)
    .execute();
}
