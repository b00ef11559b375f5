import type { Services } from '../services.ts';
import { ServiceError } from '../errors.ts';
import { createExecution } from './executions.ts';
import { requestHash } from '../text/request-hash.ts';
import type { WorkflowRecord } from './workflows.ts';
import { assertQueueRoom } from './run-queue.ts';
import { assertRunDataBudget } from './run-data-budget.ts';

/**
 * Starts a run of a stored workflow: refuses graphs that cannot execute,
 * writes the pending execution (honouring an idempotency key per workflow)
 * and hands it to the worker. Returns at once. A run with no free slot waits,
 * unless its organization already has its bound of waiting runs (429); no run
 * starts once its organization has written its day's run data (429).
 */
export async function startWorkflowRun(
  services: Services,
  workflow: WorkflowRecord,
  options: { userId: string | null; input: Record<string, unknown>; triggerType: string; idempotencyKey?: string },
): Promise<{ executionId: string; replayed: boolean; status: string }> {
  if (!workflow.organizationId) throw new ServiceError(409, 'conflict', 'An anonymous workflow cannot run; claim it into an organization first.');
  // Already trimmed and bounded by the one rule (parseIdempotencyKey, applied by invokeTool).
  const { idempotencyKey } = options;
  // With a free slot the row is written already claimed and runs at once: no second write to claim it.
  const admission = services.engine.admit(workflow.organizationId);
  let created;
  try {
    // No slot: the run would wait, and an organization's waiting runs are bounded.
    if (!admission) await assertQueueRoom(services.store, workflow.organizationId, services.config.engine.maxQueuedPerOrg);
    await assertRunDataBudget(services.store, workflow.organizationId, services.config.engine.runDataPerOrgPerDayBytes);
    created = await createExecution(services.store, {
      claimedBy: admission?.claimedBy,
      workflowId: workflow.id,
      organizationId: workflow.organizationId,
      userId: options.userId,
      graph: { nodes: workflow.nodes, edges: workflow.edges },
      input: options.input,
      triggerType: options.triggerType,
      idempotencyKey,
      requestHash: idempotencyKey ? requestHash({ input: options.input, triggerType: options.triggerType }) : undefined,
    });
  } catch (error) {
    admission?.release();
    throw error;
  }
  const { id, replayed, status, row } = created;
  if (admission && row) {
    admission.run(row);
  } else {
    admission?.release();
    if (!replayed) services.engine.enqueue(id, workflow.organizationId);
  }
  return { executionId: id, replayed, status };
}
