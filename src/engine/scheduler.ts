import { sql } from 'kysely';
import { sharedNow } from '../store/clock.ts';
import { isUniqueViolation, type Store } from '../store/db.ts';
import type { WorkflowSchedulesTable } from '../store/schema.ts';
import { parseCron } from './cron.ts';
import { createExecution } from './executions.ts';
import { DROPPED, triggerAdmission, type AdmissionLimits } from './trigger-admission.ts';
import { returnSkippedRunSlot } from './skipped-runs.ts';
import type { WorkflowGraph } from './graph.ts';
import type { WorkflowRecord } from './workflows.ts';

/**
 * Schedule triggers. Each enabled workflow with a Schedule trigger has one
 * row holding its next occurrence. A tick inserts the execution for a due
 * occurrence under the unique key (workflow, scheduled_for) and then advances
 * next_run_at with compare-and-swap, so an occurrence runs once even across
 * restarts and several gateway processes.
 *
 * Missed occurrences (the gateway was down): one catch-up run, stamped with
 * the earliest missed occurrence, then the schedule resumes at the next
 * future occurrence; the other missed ones are skipped.
 *
 * A tick starts at most TICK_BATCH occurrences, shared between the
 * organizations that have one due (dueSchedules), so one tenant's thousands of
 * due schedules cannot hold back another tenant's one.
 */

/** The occurrences one tick starts in all. */
const TICK_BATCH = 100;

/**
 * The due schedules one tick takes. Every organization with a due schedule (the
 * TICK_BATCH whose earliest is earliest, when more are due) gets an equal share,
 * its earliest first, interleaved so none waits behind another's share. The
 * organizations are found by seeking the (organization_id, next_run_at) index
 * from one to the next: a cost per organization, never per schedule due. Taking
 * the earliest TICK_BATCH of all instead let a tenant with a backlog of due
 * schedules take every tick while others' came due.
 */
async function dueSchedules(store: Store, now: number): Promise<WorkflowSchedulesTable[]> {
  // Most ticks find nothing due: one seek of the next_run_at index says so before organizations are walked.
  const next = await store.selectFrom('workflow_schedules').select('next_run_at').orderBy('next_run_at').limit(1).executeTakeFirst();
  if (!next || Number(next.next_run_at) > now) return [];
  const { rows } = await sql<{ organization_id: string; first_due: number }>`
    with recursive orgs(organization_id) as (
      select min(organization_id) from workflow_schedules
      union all
      select (select min(s.organization_id) from workflow_schedules s where s.organization_id > orgs.organization_id)
      from orgs where orgs.organization_id is not null
    )
    select organization_id, (select min(s.next_run_at) from workflow_schedules s where s.organization_id = orgs.organization_id) as first_due
    from orgs where organization_id is not null`.execute(store);
  const due = rows
    .filter((r) => r.first_due !== null && Number(r.first_due) <= now)
    .sort((a, b) => Number(a.first_due) - Number(b.first_due))
    .slice(0, TICK_BATCH);
  if (due.length === 0) return [];
  const share = Math.floor(TICK_BATCH / due.length);
  const shares = await Promise.all(
    due.map((r) =>
      store
        .selectFrom('workflow_schedules')
        .selectAll()
        .where('organization_id', '=', r.organization_id)
        .where('next_run_at', '<=', now)
        .orderBy('next_run_at')
        .limit(share)
        .execute(),
    ),
  );
  const taken: WorkflowSchedulesTable[] = [];
  for (let turn = 0; turn < share; turn++) for (const list of shares) if (list[turn]) taken.push(list[turn]!);
  return taken;
}

function scheduleOf(workflow: Pick<WorkflowRecord, 'nodes' | 'enabled'>): { cron: string; timezone: string } | undefined {
  if (!workflow.enabled) return undefined;
  const trigger = workflow.nodes.find((n) => n.type === 'trigger');
  const config = trigger?.data.config ?? {};
  if (config.triggerType !== 'Schedule' || typeof config.scheduleCron !== 'string') return undefined;
  const parsed = parseCron(config.scheduleCron, typeof config.scheduleTimezone === 'string' && config.scheduleTimezone ? config.scheduleTimezone : undefined);
  return parsed.ok ? { cron: parsed.expression, timezone: parsed.timezone } : undefined;
}

function nextAfter(cron: string, timezone: string, from: Date): number | undefined {
  const parsed = parseCron(cron, timezone);
  if (!parsed.ok) return undefined;
  return parsed.nextRuns(1, from)[0]?.getTime();
}

/** Keeps the schedule row in step with a saved workflow (called after create and update). */
export async function syncSchedule(store: Store, workflow: WorkflowRecord): Promise<void> {
  const schedule = workflow.organizationId ? scheduleOf(workflow) : undefined;
  if (!schedule) {
    await store.deleteFrom('workflow_schedules').where('workflow_id', '=', workflow.id).execute();
    return;
  }
  const existing = await store.selectFrom('workflow_schedules').selectAll().where('workflow_id', '=', workflow.id).executeTakeFirst();
  if (existing && existing.cron === schedule.cron && existing.timezone === schedule.timezone) return;
  const next = nextAfter(schedule.cron, schedule.timezone, new Date(sharedNow()));
  if (next === undefined) return;
  const row = {
    workflow_id: workflow.id,
    organization_id: workflow.organizationId!,
    cron: schedule.cron,
    timezone: schedule.timezone,
    next_run_at: next,
    last_run_at: existing?.last_run_at ?? null,
  };
  await store
    .insertInto('workflow_schedules')
    .values(row)
    .onConflict((oc) => oc.column('workflow_id').doUpdateSet({ cron: row.cron, timezone: row.timezone, next_run_at: row.next_run_at }))
    .execute();
}

/** A skipped run is written without its graph (executions.ts): the workflow's graph is not read for one. */
const SKIPPED_RUN_GRAPH: WorkflowGraph = { nodes: [], edges: [] };

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

export interface Scheduler {
  /** One pass over due schedules; returns the executions it created. */
  tick(now?: Date): Promise<string[]>;
  start(): void;
  stop(): void;
}

export function createScheduler(
  store: Store,
  enqueue: (executionId: string, organizationId: string) => void,
  options: { tickMs?: number } & AdmissionLimits,
): Scheduler {
  const tickMs = options.tickMs ?? 1000;
  let timer: NodeJS.Timeout | undefined;
  let running = false;

  /** The run of one due occurrence, if one is written; the graph (up to 1 MB) is read only for a run that will run. */
  async function startOccurrence(schedule: WorkflowSchedulesTable, skipIfOverBounds: ReturnType<typeof triggerAdmission>): Promise<string | undefined> {
    const workflow = await store
      .selectFrom('workflows')
      .select(['id', 'organization_id', 'user_id', 'enabled'])
      .where('id', '=', schedule.workflow_id)
      .executeTakeFirst();
    const organizationId = workflow?.enabled === 1 ? workflow.organization_id : null;
    if (!workflow || !organizationId) return undefined;
    // DROPPED: skipped past the day's bound on skipped runs, so it leaves no row; the schedule moves on either way.
    const skipped = await skipIfOverBounds(organizationId);
    if (skipped === DROPPED) return undefined;
    let graph = SKIPPED_RUN_GRAPH;
    if (!skipped) {
      const stored = await store.selectFrom('workflows').select(['nodes', 'edges']).where('id', '=', workflow.id).executeTakeFirst();
      if (!stored) return undefined; // deleted meanwhile
      graph = { nodes: JSON.parse(stored.nodes), edges: JSON.parse(stored.edges) } as WorkflowGraph;
    }
    const occurrence = new Date(schedule.next_run_at).toISOString();
    try {
      const { id } = await createExecution(store, {
        workflowId: workflow.id,
        organizationId,
        userId: workflow.user_id,
        graph,
        input: { scheduledFor: occurrence },
        triggerType: 'Schedule',
        scheduledFor: occurrence,
        skipped,
      });
      if (!skipped) enqueue(id, organizationId);
      return id;
    } catch (error) {
      // The unique (workflow, scheduled_for) key: another tick or process already created this occurrence. Either way
      // this attempt wrote nothing, so a skipped-run slot it took goes back (a retried occurrence takes it again).
      if (skipped) await returnSkippedRunSlot(store, organizationId).catch(() => {});
      if (!isUniqueViolation(error)) throw error;
      return undefined;
    }
  }

  /** The schedule's next occurrence after this one; one whose next cannot be computed is parked (never due) until its workflow is saved with another expression. */
  function followingRun(schedule: WorkflowSchedulesTable, now: Date): number {
    try {
      return nextAfter(schedule.cron, schedule.timezone, new Date(Math.max(now.getTime(), schedule.next_run_at))) ?? Number.MAX_SAFE_INTEGER;
    } catch (error) {
      console.error(
        `[flowgate] schedule of workflow ${schedule.workflow_id} (${JSON.stringify(schedule.cron)} ${schedule.timezone}) has no computable next run and will not run again until the workflow is saved with another expression: ${describe(error)}`,
      );
      return Number.MAX_SAFE_INTEGER;
    }
  }

  async function tick(now = new Date(sharedNow())): Promise<string[]> {
    const created: string[] = [];
    const due = await dueSchedules(store, now.getTime());
    const skipIfOverBounds = triggerAdmission(store, options);
    for (const schedule of due) {
      // Every tenant's due schedules share this loop: one that fails skips its occurrence instead of stalling the others.
      try {
        const id = await startOccurrence(schedule, skipIfOverBounds);
        if (id) created.push(id);
      } catch (error) {
        // A graph that cannot be read fails the same way at every tick: that occurrence is skipped. Anything else (the
        // database gone for a moment) leaves the schedule due, so the next tick tries the occurrence again.
        const unreadable = error instanceof SyntaxError;
        console.error(
          `[flowgate] schedule of workflow ${schedule.workflow_id}: the occurrence ${new Date(schedule.next_run_at).toISOString()} failed and ${unreadable ? 'is skipped' : 'is tried again at the next tick'}: ${describe(error)}`,
        );
        if (!unreadable) continue;
      }
      await store
        .updateTable('workflow_schedules')
        .set({ next_run_at: followingRun(schedule, now), last_run_at: schedule.next_run_at })
        .where('workflow_id', '=', schedule.workflow_id)
        .where('next_run_at', '=', schedule.next_run_at)
        .execute();
    }
    return created;
  }

  return {
    tick,
    start() {
      timer = setInterval(() => {
        if (running) return;
        running = true;
        tick()
          .catch((error) => console.error('[flowgate] scheduler tick failed:', error))
          .finally(() => (running = false));
      }, tickMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
