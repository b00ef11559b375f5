import { sql } from 'kysely';
import { sharedNow } from '../store/clock.ts';
import { ServiceError } from '../errors.ts';
import type { Store } from '../store/db.ts';
import { first, prepared } from '../store/prepared.ts';
import type { SkippedRun } from './executions.ts';
import type { WorkflowExecutionsTable } from '../store/schema.ts';

/**
 * How much run data one organization may write per UTC day
 * (FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES): every step's input and output as
 * JSON text, as a run's own data limit counts them, plus what each run stores
 * beside its steps (runDataChars). Each run is bounded on its
 * own, but runs are not: one tenant starting runs that each log their limit
 * wrote gigabytes a minute into the database every tenant shares. A run's
 * data is added in the commit that ends it, also when it never ran (cancelled
 * while pending, reaped, its payment not settled); a run is refused (or, started by
 * a trigger, written as skipped) once its organization has used the day's
 * budget. Runs already going when the budget runs out finish, so a day may end
 * a few runs' data over it.
 */

/**
 * The characters a finished run stored: its steps' data, and the copy of the
 * graph it ran and its input that each run keeps. Those two are up to a
 * request body each (1 MiB by default) and the caller chooses them, so a
 * large graph whose steps log little must not run free of the budget.
 */
export const runDataChars = (row: Pick<WorkflowExecutionsTable, 'graph' | 'input'>, stepChars: number): number =>
  stepChars + (row.graph?.length ?? 0) + (row.input?.length ?? 0);

/** The UTC day of `ms`, as the budget's rows key it. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const nextUtcMidnight = (ms: number) => {
  const day = new Date(ms);
  return Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate() + 1);
};

const secondsToNextDay = (ms: number) => Math.max(1, Math.ceil((nextUtcMidnight(ms) - ms) / 1000));

const megabytes = (chars: number) => `${(chars / (1024 * 1024)).toFixed(1)} MB`;

const selectUsed = prepared<{ organizationId: string; day: string }, { chars: number | string; skipped_runs: number }>((db: Store, a) =>
  db.selectFrom('organization_run_data').select(['chars', 'skipped_runs']).where('organization_id', '=', a.organizationId).where('day', '=', a.day),
);

const addUsed = prepared<{ organizationId: string; day: string; chars: number }, { chars: number | string }>((db: Store, a) =>
  db
    .insertInto('organization_run_data')
    .values({ organization_id: a.organizationId, day: a.day, chars: a.chars })
    .onConflict((oc) => oc.columns(['organization_id', 'day']).doUpdateSet({ chars: sql`organization_run_data.chars + excluded.chars` }))
    .returning('chars'),
);

/**
 * Organizations found under budget lately, until when (ms epoch): a run start reads the sum at most once a
 * second per organization. The run whose data crosses the budget forgets its organization here, so this
 * process refuses the next run at once; other processes within a second.
 */
const underBudgetUntil = new WeakMap<Store, Map<string, number>>();
const RECHECK_MS = 1_000;

/** Adds a finished run's data to its organization's day, on `via` (the transaction that ends the run). */
export async function recordRunData(store: Store, organizationId: string, chars: number, max: number, via: Store = store, now = sharedNow()): Promise<void> {
  if (chars <= 0) return;
  const total = Number((await first(addUsed, store, { organizationId, day: utcDay(now), chars }, via))?.chars ?? 0);
  if (total >= max) underBudgetUntil.get(store)?.delete(organizationId);
}

/**
 * The run data the organization's runs have written today (UTC), the triggered runs skipped today (counted by
 * skipped-runs.ts, also those past its bound), and when the day starts again.
 */
export async function runDataToday(store: Store, organizationId: string, now = sharedNow()): Promise<{ used: number; skippedRuns: number; resetsAt: string }> {
  const row = await first(selectUsed, store, { organizationId, day: utcDay(now) });
  return { used: Number(row?.chars ?? 0), skippedRuns: Number(row?.skipped_runs ?? 0), resetsAt: new Date(nextUtcMidnight(now)).toISOString() };
}

/** What the organization's day leaves: undefined when it has room, else the refusal's facts. */
async function spent(store: Store, organizationId: string, max: number, now: number): Promise<{ used: number; retryAfterSeconds: number } | undefined> {
  let known = underBudgetUntil.get(store);
  if (!known) underBudgetUntil.set(store, (known = new Map()));
  if ((known.get(organizationId) ?? 0) > now) return undefined;
  const { used } = await runDataToday(store, organizationId, now);
  if (used < max) {
    if (known.size > 10_000) known.clear();
    known.set(organizationId, now + RECHECK_MS);
    return undefined;
  }
  return { used, retryAfterSeconds: secondsToNextDay(now) };
}

/** Throws 429 rate_limited when `organizationId` has written its day's run data. */
export async function assertRunDataBudget(store: Store, organizationId: string, max: number, now = sharedNow()): Promise<void> {
  const over = await spent(store, organizationId, max, now);
  if (!over) return;
  throw new ServiceError(
    429,
    'rate_limited',
    `This organization's runs have written ${megabytes(over.used)} of run data today (UTC), its budget of ${megabytes(max)} (FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES); runs start again at 00:00 UTC, in ${over.retryAfterSeconds} s. Steps that pass less data along (select fields, use smaller pages) stretch the budget.`,
    { limit: max, retryAfterSeconds: over.retryAfterSeconds },
    { 'Retry-After': String(over.retryAfterSeconds) },
  );
}

/** A triggered run's skip reason when its organization has written its day's run data (see run-queue.ts skippedForFullQueue). */
export async function skipForRunDataBudget(store: Store, organizationId: string, max: number): Promise<SkippedRun | undefined> {
  if (!(await spent(store, organizationId, max, sharedNow()))) return undefined;
  return {
    error: `Skipped: this organization's runs had written their day's budget of ${megabytes(max)} of run data (FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES), so this triggered run was not started. Triggers run again from 00:00 UTC.`,
    context: { reason: 'run_data_budget', limit: max },
  };
}

/** Forgets days before yesterday (the budget reads today only; yesterday stays for a run that ended across midnight). */
export async function pruneRunData(store: Store, now = sharedNow()): Promise<void> {
  await store
    .deleteFrom('organization_run_data')
    .where('day', '<', utcDay(now - 24 * 60 * 60 * 1000))
    .execute();
}
