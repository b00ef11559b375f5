import type { Services } from '../services.ts';
import { ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { claimAwaitingRow, createExecution } from './executions.ts';
import type { WorkflowRecord } from './workflows.ts';
import type { Store } from '../store/db.ts';
import { first, prepared } from '../store/prepared.ts';
import { groupCommit, writeAlongside } from '../store/group-commit.ts';
import { recordRunData, runDataChars } from './run-data-budget.ts';

/**
 * Runs that wait for something outside the engine (a payment settling)
 * before they may start. The row is written first as `awaiting_payment`,
 * which no worker claims; `release` makes it pending and enqueues it,
 * `abandon` ends it as an error without running a step.
 */

/** Writes the run `awaiting_payment`, in `via` (the transaction that claims its payment) when given. */
export async function prepareGatedRun(
  services: Services,
  workflow: WorkflowRecord,
  input: Record<string, unknown>,
  triggerType: string,
  via?: Store,
): Promise<string> {
  if (!workflow.organizationId) throw new ServiceError(409, 'conflict', 'An anonymous workflow cannot run; claim it into an organization first.');
  const { id } = await createExecution(
    services.store,
    {
      workflowId: workflow.id,
      organizationId: workflow.organizationId,
      userId: null,
      graph: { nodes: workflow.nodes, edges: workflow.edges },
      input,
      triggerType,
      initialStatus: 'awaiting_payment',
    },
    via,
  );
  return id;
}

// Every paid call releases its run: compiled once per store (src/store/prepared.ts).
const release = prepared<{ id: string }, { organization_id: string }>((db: Store, a) =>
  db.updateTable('workflow_executions').set({ status: 'pending' }).where('id', '=', a.id).where('status', '=', 'awaiting_payment').returning('organization_id'),
);

/**
 * Lets a paid run start. With a free slot for its organization it is claimed as it is released (one write, and it
 * starts at once, as a free run with a slot does); otherwise it becomes pending and waits for a slot. `alongside`
 * (the payment's settled record) is written with the release (src/store/group-commit.ts, writeAlongside).
 */
export async function releaseGatedRun(
  services: Services,
  executionId: string,
  organizationId: string,
  alongside?: (via: Store) => Promise<unknown>,
): Promise<void> {
  const admission = services.engine.admit(organizationId);
  if (admission) {
    let row;
    try {
      row = await claimAwaitingRow(services.store, executionId, admission.claimedBy.owner, admission.claimedBy.leaseMs, alongside);
    } catch (error) {
      admission.release();
      throw error;
    }
    if (row) admission.run(row);
    else admission.release();
    return;
  }
  const released = await writeAlongside(services.store, alongside, (via) => first(release, services.store, { id: executionId }, via));
  if (released) services.engine.enqueue(executionId, released.organization_id);
}

export async function abandonGatedRun(services: Services, executionId: string, reason: string): Promise<void> {
  const now = nowIso();
  const store = services.store;
  await groupCommit(store, async (trx) => {
    const ended = await trx
      .updateTable('workflow_executions')
      .set({ status: 'error', error: reason, error_context: JSON.stringify({ reason: 'payment_not_settled' }), completed_at: now })
      .where('id', '=', executionId)
      .where('status', '=', 'awaiting_payment')
      .returning(['organization_id', 'graph', 'input'])
      .executeTakeFirst();
    // It never runs, yet keeps its graph copy and input: charged to the day's run data as a finished run's are.
    if (ended) await recordRunData(store, ended.organization_id, runDataChars(ended, 0), services.config.engine.runDataPerOrgPerDayBytes, trx);
  });
  services.engine.events.finished(executionId, 'error');
}
