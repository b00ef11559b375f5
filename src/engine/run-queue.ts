import { sql } from 'kysely';
import { ServiceError } from '../errors.ts';
import type { Store } from '../store/db.ts';
import { first, prepared } from '../store/prepared.ts';
import type { SkippedRun } from './executions.ts';

/**
 * How many runs one organization may have waiting for a slot. Past its share
 * of slots (FLOWGATE_ENGINE_CONCURRENCY_PER_ORG) an organization's runs are
 * written `pending` and wait; without a bound, one tenant starting slow runs
 * in a loop grew that backlog without end (a row, and its graph, per run, in
 * the shared database; and each sweep of pending rows longer). The next run
 * past the bound is refused before anything is written.
 */

/** Seconds a refused caller is told to wait: about as long as a run holding a slot takes to free it for a quick one. */
const RETRY_AFTER_SECONDS = 5;

// Counted on the partial index of pending runs (migration 022), up to the bound; 'pending' is written as a literal
// so the planner can match the index's condition. Prepared: it runs for every run that finds no free slot.
const countWaiting = prepared<{ organizationId: string; max: number }, { waiting: number | string }>((db: Store, a) =>
  db
    .selectFrom((d) =>
      d
        .selectFrom('workflow_executions')
        .select(sql.lit(1).as('one'))
        .where(sql.ref('status'), '=', sql.lit('pending'))
        .where('organization_id', '=', a.organizationId)
        .limit(a.max)
        .as('w'),
    )
    .select((eb) => eb.fn.countAll().as('waiting')),
);

/** How many runs `organizationId` has waiting for a slot, counted up to `max`. */
export async function waitingRuns(store: Store, organizationId: string, max: number): Promise<number> {
  return Number((await first(countWaiting, store, { organizationId, max }))?.waiting ?? 0);
}

/** How long a count of an organization's waiting runs may stand in for the next, while the queue is under half full. */
const RECOUNT_MS = 1_000;

/** Per store and organization: the last count of its waiting runs, plus one for each run let through on it since. */
const lastCounts = new WeakMap<Store, Map<string, { waiting: number; countedAt: number }>>();

/**
 * Whether `organizationId` already has `max` runs waiting for a slot. Under sustained load every run of a busy
 * organization waits for a slot and asks this, so the count (about a fifth of the statements of a quick run's start)
 * is not read for each: while the queue was under half full when counted, within the last RECOUNT_MS, a run is let
 * through on that count, and each one let through adds one to it. From half full, and at least once a second, the
 * rows are counted again; so the bound holds exactly for this process, and runs queued meanwhile by other instances
 * on the same database can take it over by at most what they queue in that second.
 */
export async function queueIsFull(store: Store, organizationId: string, max: number): Promise<boolean> {
  let counts = lastCounts.get(store);
  if (!counts) lastCounts.set(store, (counts = new Map()));
  const now = Date.now();
  const last = counts.get(organizationId);
  if (last && now - last.countedAt < RECOUNT_MS && (last.waiting + 1) * 2 < max) {
    last.waiting++;
    return false;
  }
  const waiting = await waitingRuns(store, organizationId, max);
  // Bounded: forgetting a count only means counting again.
  if (counts.size >= 10_000) counts.clear();
  counts.set(organizationId, { waiting: waiting + 1, countedAt: now });
  return waiting >= max;
}

/** Throws 429 rate_limited when `organizationId` already has `max` runs waiting for a slot. */
export async function assertQueueRoom(store: Store, organizationId: string, max: number): Promise<void> {
  if (!(await queueIsFull(store, organizationId, max))) return;
  throw new ServiceError(
    429,
    'rate_limited',
    `This organization already has ${max} runs waiting for a slot (FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG); no more are queued until some have run. Retry after ${RETRY_AFTER_SECONDS} s, or follow the runs you started to their end first.`,
    { limit: max, retryAfterSeconds: RETRY_AFTER_SECONDS },
    { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  );
}

/**
 * Runs started by a schedule or a chain event have no caller to refuse, and
 * would otherwise queue past the bound without end (a tenant's many schedules,
 * or a Block trigger on a fast chain, behind slow runs). Such an occurrence is
 * written as a run that ended at once, saying why, so its owner sees it in the
 * run history; it is not retried, and later occurrences run once the queue has room.
 */
export function skippedForFullQueue(max: number): SkippedRun {
  return {
    error: `Skipped: this organization already had ${max} runs waiting for a slot (FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG), so this triggered run was not queued. Later triggers run once earlier runs have finished.`,
    context: { reason: 'queue_full', limit: max },
  };
}
