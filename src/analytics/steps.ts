import { z } from 'zod';
import type { Store } from '../store/db.ts';
import { executionNotFound } from '../engine/executions.ts';
import { directRunStatus } from './statuses.ts';
import { storedJson } from '../text/json-text.ts';

/**
 * SPEC `/api/analytics/runs/{executionId}/steps`: what each step of a run
 * did, in the order it ran. Inputs and outputs are the log rows, already
 * redacted when they were written (src/engine/step-log.ts), and answered as
 * the JSON text stored (JsonText): a run's logs can hold up to its data
 * limit, too much to parse and make again per read. A direct
 * execution has one step, the execution itself. Another organization's run
 * is 404, as a missing one.
 */

export const stepSchema = z.object({
  nodeId: z.string(),
  nodeName: z.string().nullable(),
  status: z.string(),
  input: z.unknown(),
  output: z.unknown(),
  durationMs: z.number().nullable(),
  timestamp: z.string().nullable(),
  error: z.string().nullable(),
});
export const stepsSchema = z.object({
  steps: z.array(stepSchema),
  dataPrunedAt: z.string().optional().describe("Present when the deployment's retention removed this run's steps (FLOWGATE_RUN_DATA_RETENTION_DAYS)"),
});

const parse = (text: string | null): unknown => {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

export async function runSteps(store: Store, organizationId: string, executionId: string): Promise<z.output<typeof stepsSchema>> {
  const run = await store
    .selectFrom('workflow_executions')
    .select(['id', 'data_pruned_at'])
    .where('id', '=', executionId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  if (run) {
    const logs = await store
      .selectFrom('workflow_execution_logs')
      .select(['node_id', 'node_name', 'status', 'input', 'output', 'duration_ms', 'started_at', 'completed_at', 'error'])
      .where('execution_id', '=', executionId)
      .orderBy('seq')
      .orderBy('id')
      .execute();
    return {
      steps: logs.map((log) => ({
        nodeId: log.node_id,
        nodeName: log.node_name,
        status: log.status,
        input: storedJson(log.input),
        output: storedJson(log.output),
        durationMs: log.duration_ms,
        timestamp: log.started_at ?? log.completed_at,
        error: log.error,
      })),
      ...(run.data_pruned_at ? { dataPrunedAt: run.data_pruned_at } : {}),
    };
  }
  const direct = await store
    .selectFrom('direct_executions')
    .select(['type', 'chain_id', 'status', 'from_address', 'to_address', 'value_wei', 'transaction_hash', 'result', 'error', 'created_at', 'completed_at'])
    .where('id', '=', executionId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  if (!direct) throw executionNotFound(executionId);
  return {
    steps: [
      {
        nodeId: direct.type,
        nodeName: direct.type,
        status: directRunStatus(direct.status),
        input: { chainId: direct.chain_id, from: direct.from_address, to: direct.to_address, valueWei: direct.value_wei },
        output: { transactionHash: direct.transaction_hash, result: parse(direct.result) },
        durationMs: direct.completed_at ? Date.parse(direct.completed_at) - Date.parse(direct.created_at) : null,
        timestamp: direct.created_at,
        error: direct.error,
      },
    ],
  };
}
