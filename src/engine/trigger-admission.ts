import type { Store } from '../store/db.ts';
import type { SkippedRun } from './executions.ts';
import { queueIsFull, skippedForFullQueue } from './run-queue.ts';
import { skipForRunDataBudget } from './run-data-budget.ts';
import { takeSkippedRunSlot } from './skipped-runs.ts';

/**
 * The bounds a run started by a schedule or a chain event must fit, asked at
 * most once per organization per pass (a scheduler tick or a chain poll): the
 * organization's waiting runs and its day's run data. Such a run has no caller
 * to refuse, so past either it is written as a run that ended at once, saying
 * why; past the day's bound on such runs (skipped-runs.ts) it leaves no row at
 * all (DROPPED). A pass may add up to its own batch past a bound, which keeps
 * the checks off every occurrence.
 */

export interface AdmissionLimits {
  maxQueuedPerOrg: number;
  runDataPerOrgPerDayBytes: number;
  maxSkippedRunsPerOrgPerDay: number;
}

/** The occurrence is neither run nor written: its organization's day already holds its bound of skipped runs. */
export const DROPPED = Symbol('dropped');

/** Per occurrence: undefined (run it), the skip to write, or DROPPED. */
export function triggerAdmission(store: Store, limits: AdmissionLimits): (organizationId: string) => Promise<SkippedRun | typeof DROPPED | undefined> {
  const verdicts = new Map<string, Promise<SkippedRun | undefined>>();
  const check = async (organizationId: string): Promise<SkippedRun | undefined> => {
    if (await queueIsFull(store, organizationId, limits.maxQueuedPerOrg)) return skippedForFullQueue(limits.maxQueuedPerOrg);
    return skipForRunDataBudget(store, organizationId, limits.runDataPerOrgPerDayBytes);
  };
  return async (organizationId) => {
    let verdict = verdicts.get(organizationId);
    if (!verdict) verdicts.set(organizationId, (verdict = check(organizationId)));
    const skipped = await verdict;
    if (!skipped) return undefined;
    return (await takeSkippedRunSlot(store, organizationId, limits.maxSkippedRunsPerOrgPerDay)) ? skipped : DROPPED;
  };
}
