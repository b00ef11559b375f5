import { sql } from 'kysely';
import type { Store } from '../store/db.ts';
import type { WorkflowExecutionsTable, WorkflowExecutionLogsTable } from '../store/schema.ts';
import { ServiceError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { WorkflowGraph } from './graph.ts';

/** Execution rows and their per-node logs: the durable record every run writes before it acts. */

export const TERMINAL_STATUSES = ['success', 'error', 'system_error', 'cancelled'] as const;
export type ExecutionStatus = 'pending' | 'running' | 'unconfirmed' | (typeof TERMINAL_STATUSES)[number];
export const isTerminal = (status: string) => (TERMINAL_STATUSES as readonly string[]).includes(status);
/** Seconds a client should wait before polling again; 0 means terminal (SPEC: terminality is decided by this). */
export const pollIntervalHint = (status: string) => (isTerminal(status) ? 0 : status === 'unconfirmed' ? 5 : 1);

export interface TransactionHashEntry {
  hash: string;
  nodeId: string;
  nodeName: string;
  chainId?: number;
  network?: string;
  iterationIndex?: number;
  verified?: boolean;
  receiptStatus?: 'success' | 'reverted' | 'safe_inner_failure' | 'not_found' | 'timeout';
  blockNumber?: number;
  gasUsed?: string;
  verifiedAt?: string;
}

export interface ExecutionRecord {
  id: string;
  executionId: string;
  workflowId: string;
  userId: string | null;
  status: string;
  input: Record<string, unknown>;
  output: Record<string, unknown> | null;
  error: string | null;
  errorContext: Record<string, unknown> | null;
  triggerType: string | null;
  startedAt: string | null;
  completedAt: string | null;
  duration: string | null;
  gasUsedWei: string | null;
  transactionHashes: TransactionHashEntry[];
  createdAt: string;
}

const parseJson = <T>(text: string | null, fallback: T): T => {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
};

export function toExecutionRecord(row: WorkflowExecutionsTable): ExecutionRecord {
  const started = row.started_at ? Date.parse(row.started_at) : undefined;
  const ended = row.completed_at ? Date.parse(row.completed_at) : undefined;
  return {
    id: row.id,
    executionId: row.id,
    workflowId: row.workflow_id,
    userId: row.user_id,
    status: row.status,
    input: parseJson(row.input, {}),
    output: parseJson(row.output, null),
    error: row.error,
    errorContext: parseJson(row.error_context, null),
    triggerType: row.trigger_type,
    startedAt: row.started_at,
    completedAt: row.completed_at,
    duration: started !== undefined && ended !== undefined ? String(ended - started) : null,
    gasUsedWei: row.gas_used_wei,
    transactionHashes: parseJson(row.transaction_hashes, []),
    createdAt: row.created_at,
  };
}

export interface LogRecord {
  id: string;
  executionId: string;
  nodeId: string;
  nodeName: string | null;
  nodeType: string | null;
  status: string;
  input: unknown;
  output: unknown;
  error: string | null;
  duration: string | null;
  startedAt: string | null;
  completedAt: string | null;
  iterationIndex: number | null;
  forEachNodeId: string | null;
}

export function toLogRecord(row: WorkflowExecutionLogsTable): LogRecord {
  return {
    id: row.id,
    executionId: row.execution_id,
    nodeId: row.node_id,
    nodeName: row.node_name,
    nodeType: row.node_type,
    status: row.status,
    input: parseJson(row.input, null),
    output: parseJson(row.output, null),
    error: row.error,
    duration: row.duration_ms === null ? null : String(row.duration_ms),
    startedAt: row.started_at,
    completedAt: row.completed_at,
    iterationIndex: row.iteration_index,
    forEachNodeId: row.for_each_node_id,
  };
}

export const executionNotFound = (executionId: string) =>
  new ServiceError(404, 'not_found', `Execution ${executionId} not found in this organization.`, { executionId });

export async function getExecutionRow(store: Store, organizationId: string, executionId: string): Promise<WorkflowExecutionsTable> {
  const row = await store.selectFrom('workflow_executions').selectAll().where('id', '=', executionId).where('organization_id', '=', organizationId).executeTakeFirst();
  if (!row) throw executionNotFound(executionId);
  return row;
}

export interface NewExecution {
  workflowId: string;
  organizationId: string;
  userId: string | null;
  graph: WorkflowGraph;
  input: Record<string, unknown>;
  triggerType: string;
  idempotencyKey?: string;
  requestHash?: string;
  scheduledFor?: string;
  /** `awaiting_payment`: written but not runnable until released (paid workflow calls settle first). */
  initialStatus?: 'pending' | 'awaiting_payment';
}

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * Writes the pending execution row before anything runs. With an idempotency
 * key, a repeat of the same request within 24 hours returns the original
 * execution (`replayed`), a different request with the same key is a 409.
 */
export async function createExecution(store: Store, input: NewExecution): Promise<{ id: string; replayed: boolean; status: string }> {
  return store.transaction().execute(async (trx) => {
    if (input.idempotencyKey !== undefined) {
      const existing = await trx
        .selectFrom('workflow_executions')
        .select(['id', 'request_hash', 'created_at', 'status'])
        .where('workflow_id', '=', input.workflowId)
        .where('idempotency_key', '=', input.idempotencyKey)
        .executeTakeFirst();
      if (existing && Date.parse(existing.created_at) > Date.now() - IDEMPOTENCY_WINDOW_MS) {
        if (existing.request_hash !== input.requestHash) {
          throw new ServiceError(409, 'idempotency_conflict', 'This Idempotency-Key was already used with a different request body for this workflow; use a new key for a new request.', {
            retryable: false,
            originalExecutionId: existing.id,
          });
        }
        return { id: existing.id, replayed: true, status: existing.status };
      }
      // An expired key is free again: detach it from the old run.
      if (existing) await trx.updateTable('workflow_executions').set({ idempotency_key: null }).where('id', '=', existing.id).execute();
    }
    const id = newId();
    await trx
      .insertInto('workflow_executions')
      .values({
        id,
        workflow_id: input.workflowId,
        organization_id: input.organizationId,
        user_id: input.userId,
        status: input.initialStatus ?? 'pending',
        input: JSON.stringify(input.input),
        output: null,
        error: null,
        created_at: nowIso(),
        started_at: null,
        completed_at: null,
        graph: JSON.stringify(input.graph),
        trigger_type: input.triggerType,
        lease_owner: null,
        lease_expires_at: null,
        heartbeat_at: null,
        cancel_requested: 0,
        error_context: null,
        idempotency_key: input.idempotencyKey ?? null,
        request_hash: input.requestHash ?? null,
        transaction_hashes: '[]',
        gas_used_wei: null,
        scheduled_for: input.scheduledFor ?? null,
        current_node_id: null,
      })
      .execute();
    return { id, replayed: false, status: input.initialStatus ?? 'pending' };
  });
}

/** Claims a pending execution for one worker (compare-and-swap on status). */
export async function claimExecution(store: Store, executionId: string, owner: string, leaseMs: number): Promise<boolean> {
  const now = Date.now();
  const result = await store
    .updateTable('workflow_executions')
    .set({ status: 'running', lease_owner: owner, lease_expires_at: now + leaseMs, heartbeat_at: new Date(now).toISOString(), started_at: new Date(now).toISOString() })
    .where('id', '=', executionId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function heartbeat(store: Store, executionId: string, owner: string, leaseMs: number, currentNodeId?: string | null): Promise<{ cancelRequested: boolean; owned: boolean }> {
  const now = Date.now();
  // One statement renews the lease and reads the cancel flag.
  const row = await store
    .updateTable('workflow_executions')
    .set({ lease_expires_at: now + leaseMs, heartbeat_at: new Date(now).toISOString(), ...(currentNodeId !== undefined ? { current_node_id: currentNodeId } : {}) })
    .where('id', '=', executionId)
    .where('lease_owner', '=', owner)
    .where('status', 'in', ['running', 'unconfirmed'])
    .returning('cancel_requested')
    .executeTakeFirst();
  if (row) return { owned: true, cancelRequested: row.cancel_requested === 1 };
  const current = await store.selectFrom('workflow_executions').select('cancel_requested').where('id', '=', executionId).executeTakeFirst();
  return { owned: false, cancelRequested: current?.cancel_requested === 1 };
}

export async function cancelFlag(store: Store, executionId: string): Promise<boolean> {
  const row = await store.selectFrom('workflow_executions').select('cancel_requested').where('id', '=', executionId).executeTakeFirst();
  return row?.cancel_requested === 1;
}

export interface Completion {
  status: ExecutionStatus;
  output?: Record<string, unknown> | null;
  error?: string | null;
  errorContext?: Record<string, unknown> | null;
  transactionHashes?: TransactionHashEntry[];
  gasUsedWei?: string | null;
}

/** Records the outcome; only the lease owner may (a reaped run cannot be overwritten by a late worker). */
export async function completeExecution(store: Store, executionId: string, owner: string, completion: Completion): Promise<boolean> {
  const result = await store
    .updateTable('workflow_executions')
    .set({
      status: completion.status,
      output: completion.output === undefined ? undefined : JSON.stringify(completion.output),
      error: completion.error ?? null,
      error_context: completion.errorContext ? JSON.stringify(completion.errorContext) : null,
      ...(completion.transactionHashes ? { transaction_hashes: JSON.stringify(completion.transactionHashes) } : {}),
      ...(completion.gasUsedWei !== undefined ? { gas_used_wei: completion.gasUsedWei } : {}),
      completed_at: isTerminal(completion.status) ? nowIso() : null,
      lease_expires_at: isTerminal(completion.status) ? null : undefined,
      current_node_id: null,
    })
    .where('id', '=', executionId)
    .where('lease_owner', '=', owner)
    .where('status', 'in', ['running', 'unconfirmed'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Appends a transaction hash before broadcast, so a crash never loses the evidence. */
export async function appendTransactionHash(store: Store, executionId: string, entry: TransactionHashEntry): Promise<void> {
  await store.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('workflow_executions').select('transaction_hashes').where('id', '=', executionId).executeTakeFirstOrThrow();
    const list = parseJson<TransactionHashEntry[]>(row.transaction_hashes, []);
    list.push(entry);
    await trx.updateTable('workflow_executions').set({ transaction_hashes: JSON.stringify(list) }).where('id', '=', executionId).execute();
  });
}

/** Running executions whose lease lapsed: their worker died. They end as system_error, with context. */
export async function reapExpired(store: Store, now = Date.now()): Promise<string[]> {
  const stale = await store
    .selectFrom('workflow_executions')
    .select(['id', 'lease_owner', 'heartbeat_at', 'current_node_id', 'status'])
    .where('status', 'in', ['running'])
    .where('lease_expires_at', '<', now)
    .execute();
  const reaped: string[] = [];
  for (const row of stale) {
    // The step that was running when the worker died (the checkpoint may not have recorded it yet).
    const running = row.current_node_id
      ? undefined
      : await store.selectFrom('workflow_execution_logs').select('node_id').where('execution_id', '=', row.id).where('status', '=', 'running').orderBy('seq', 'desc').executeTakeFirst();
    const currentNodeId = row.current_node_id ?? running?.node_id ?? null;
    const result = await store
      .updateTable('workflow_executions')
      .set({
        status: 'system_error',
        error: 'The run stopped making progress (its worker stopped or lost its lease) and was ended by the reaper.',
        error_context: JSON.stringify({ reason: 'lease_expired', leaseOwner: row.lease_owner, lastHeartbeatAt: row.heartbeat_at, currentNodeId, reapedAt: new Date(now).toISOString() }),
        completed_at: new Date(now).toISOString(),
        lease_expires_at: null,
      })
      .where('id', '=', row.id)
      .where('status', '=', row.status)
      .where('lease_expires_at', '<', now)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) {
      // Steps that were mid-flight end with the run.
      await store.updateTable('workflow_execution_logs').set({ status: 'error', error: 'Interrupted: the run was reaped', completed_at: new Date(now).toISOString() }).where('execution_id', '=', row.id).where('status', 'in', ['pending', 'running']).execute();
      reaped.push(row.id);
    }
  }
  return reaped;
}

export async function pendingExecutionIds(store: Store, limit = 100): Promise<string[]> {
  const rows = await store.selectFrom('workflow_executions').select('id').where('status', '=', 'pending').orderBy('created_at').limit(limit).execute();
  return rows.map((r) => r.id);
}

/** Asks a run to stop at its next node boundary; a run that has not started is cancelled at once. */
export async function requestCancel(store: Store, organizationId: string, executionId: string): Promise<string> {
  const row = await getExecutionRow(store, organizationId, executionId);
  if (isTerminal(row.status)) return row.status;
  const immediate = await store
    .updateTable('workflow_executions')
    .set({ status: 'cancelled', cancel_requested: 1, error: 'Cancelled before it started', completed_at: nowIso() })
    .where('id', '=', executionId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (Number(immediate.numUpdatedRows) === 1) return 'cancelled';
  await store.updateTable('workflow_executions').set({ cancel_requested: 1 }).where('id', '=', executionId).execute();
  return (await getExecutionRow(store, organizationId, executionId)).status;
}

export interface LogStart {
  executionId: string;
  nodeId: string;
  nodeName: string;
  nodeType: string;
  input: unknown;
  iterationIndex?: number | null;
  forEachNodeId?: string | null;
  status?: string;
}

let logSequence = 0;

export async function startLog(store: Store, entry: LogStart): Promise<string> {
  const id = newId();
  await store
    .insertInto('workflow_execution_logs')
    .values({
      id,
      execution_id: entry.executionId,
      node_id: entry.nodeId,
      node_name: entry.nodeName,
      node_type: entry.nodeType,
      status: entry.status ?? 'running',
      input: JSON.stringify(entry.input ?? null),
      output: null,
      error: null,
      started_at: nowIso(),
      completed_at: null,
      duration_ms: null,
      // Orders rows that share a millisecond timestamp.
      seq: Date.now() * 1000 + (logSequence++ % 1000),
      iteration_index: entry.iterationIndex ?? null,
      for_each_node_id: entry.forEachNodeId ?? null,
    })
    .execute();
  return id;
}

/** A finished step in one write (For Each iterations: many short steps, no need to show them running). */
export async function writeFinishedLog(store: Store, entry: LogStart, status: string, output: unknown, error: string | null, startedAtMs: number): Promise<void> {
  await store
    .insertInto('workflow_execution_logs')
    .values({
      id: newId(),
      execution_id: entry.executionId,
      node_id: entry.nodeId,
      node_name: entry.nodeName,
      node_type: entry.nodeType,
      status,
      input: JSON.stringify(entry.input ?? null),
      output: JSON.stringify(output ?? null),
      error,
      started_at: new Date(startedAtMs).toISOString(),
      completed_at: nowIso(),
      duration_ms: Date.now() - startedAtMs,
      seq: Date.now() * 1000 + (logSequence++ % 1000),
      iteration_index: entry.iterationIndex ?? null,
      for_each_node_id: entry.forEachNodeId ?? null,
    })
    .execute();
}

export async function finishLog(store: Store, logId: string, status: string, output: unknown, error: string | null, startedAtMs: number): Promise<void> {
  await store
    .updateTable('workflow_execution_logs')
    .set({ status, output: JSON.stringify(output ?? null), error, completed_at: nowIso(), duration_ms: Date.now() - startedAtMs })
    .where('id', '=', logId)
    .execute();
}

export async function listLogs(store: Store, executionId: string): Promise<LogRecord[]> {
  const rows = await store.selectFrom('workflow_execution_logs').selectAll().where('execution_id', '=', executionId).orderBy('seq', 'desc').orderBy('id').execute();
  return rows.map(toLogRecord);
}

export async function listExecutions(store: Store, organizationId: string, workflowId: string, limit = 100): Promise<ExecutionRecord[]> {
  const rows = await store
    .selectFrom('workflow_executions')
    .selectAll()
    .where('workflow_id', '=', workflowId)
    .where('organization_id', '=', organizationId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toExecutionRecord);
}

export async function deleteExecutions(store: Store, organizationId: string, workflowId: string): Promise<number> {
  const result = await store
    .deleteFrom('workflow_executions')
    .where('workflow_id', '=', workflowId)
    .where('organization_id', '=', organizationId)
    .where(sql<boolean>`status not in ('pending', 'running', 'unconfirmed')`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
