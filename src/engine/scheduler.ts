import { isUniqueViolation, type Store } from '../store/db.ts';
import { parseCron } from './cron.ts';
import { createExecution } from './executions.ts';
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
 */

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
  const next = nextAfter(schedule.cron, schedule.timezone, new Date());
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

export interface Scheduler {
  /** One pass over due schedules; returns the executions it created. */
  tick(now?: Date): Promise<string[]>;
  start(): void;
  stop(): void;
}

export function createScheduler(store: Store, enqueue: (executionId: string, organizationId: string) => void, tickMs = 1000): Scheduler {
  let timer: NodeJS.Timeout | undefined;
  let running = false;

  async function tick(now = new Date()): Promise<string[]> {
    const created: string[] = [];
    const due = await store.selectFrom('workflow_schedules').selectAll().where('next_run_at', '<=', now.getTime()).orderBy('next_run_at').limit(100).execute();
    for (const schedule of due) {
      const workflow = await store
        .selectFrom('workflows')
        .select(['id', 'organization_id', 'user_id', 'nodes', 'edges', 'enabled'])
        .where('id', '=', schedule.workflow_id)
        .executeTakeFirst();
      const occurrence = new Date(schedule.next_run_at).toISOString();
      if (workflow && workflow.enabled === 1 && workflow.organization_id) {
        try {
          const { id } = await createExecution(store, {
            workflowId: workflow.id,
            organizationId: workflow.organization_id,
            userId: workflow.user_id,
            graph: { nodes: JSON.parse(workflow.nodes), edges: JSON.parse(workflow.edges) } as WorkflowGraph,
            input: { scheduledFor: occurrence },
            triggerType: 'Schedule',
            scheduledFor: occurrence,
          });
          created.push(id);
          enqueue(id, workflow.organization_id);
        } catch (error) {
          // The unique (workflow, scheduled_for) key: another tick or process already created this occurrence.
          if (!isUniqueViolation(error)) throw error;
        }
      }
      const next = nextAfter(schedule.cron, schedule.timezone, new Date(Math.max(now.getTime(), schedule.next_run_at)));
      await store
        .updateTable('workflow_schedules')
        .set({ next_run_at: next ?? Number.MAX_SAFE_INTEGER, last_run_at: schedule.next_run_at })
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
