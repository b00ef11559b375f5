import { sql } from 'kysely';
import { sharedNow } from '../store/clock.ts';
import type { Store } from '../store/db.ts';
import type { WorkflowExecutionsTable, WorkflowExecutionLogsTable } from '../store/schema.ts';
import { ServiceError } from '../errors.ts';
import { newSortableId, nowIso } from '../ids.ts';
import type { WorkflowGraph } from './graph.ts';
import { changed, first, prepared } from '../store/prepared.ts';
import { groupCommit, writeAlongside } from '../store/group-commit.ts';
import { readVia } from '../store/dialect.ts';
import type { RunOutcome } from './run-events.ts';
import { recordRunData, runDataChars } from './run-data-budget.ts';

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
  /** gasUsed × effective gas price, in wei. */
  gasUsedWei?: string;
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
  /** Present once retention removed the run's logs, input, output and graph copy (FLOWGATE_RUN_DATA_RETENTION_DAYS). */
  dataPrunedAt?: string;
}

const parseJson = <T>(text: string | null, fallback: T): T => {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
};

/** The columns an execution record is made of (not the graph copy, which no answer shows). */
const RECORD_COLUMNS = [
  'id',
  'workflow_id',
  'user_id',
  'status',
  'input',
  'output',
  'error',
  'error_context',
  'trigger_type',
  'started_at',
  'completed_at',
  'gas_used_wei',
  'transaction_hashes',
  'created_at',
  'data_pruned_at',
] as const;

export function toExecutionRecord(row: Pick<WorkflowExecutionsTable, (typeof RECORD_COLUMNS)[number]>): ExecutionRecord {
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
    ...(row.data_pruned_at ? { dataPrunedAt: row.data_pruned_at } : {}),
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

/** What progress reads of a log row: never its input or output. */
export type LogStatus = Pick<LogRecord, 'nodeId' | 'status' | 'iterationIndex'>;

/** A log row's input or output from its stored JSON text: parsed whole unless a reader asks for less. */
export type LogData = (text: string | null) => unknown;
const parsedLogData: LogData = (text) => parseJson(text, null);

export function toLogRecord(row: WorkflowExecutionLogsTable, data: LogData = parsedLogData): LogRecord {
  return {
    id: row.id,
    executionId: row.execution_id,
    nodeId: row.node_id,
    nodeName: row.node_name,
    nodeType: row.node_type,
    status: row.status,
    input: data(row.input),
    output: data(row.output),
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

const selectExecution = prepared<{ id: string; organizationId: string }, WorkflowExecutionsTable>((db: Store, a) =>
  db.selectFrom('workflow_executions').selectAll().where('id', '=', a.id).where('organization_id', '=', a.organizationId),
);

export async function getExecutionRow(store: Store, organizationId: string, executionId: string): Promise<WorkflowExecutionsTable> {
  const row = await first(selectExecution, store, { id: executionId, organizationId });
  if (!row) throw executionNotFound(executionId);
  return row;
}

const selectOutcome = prepared<
  { id: string; organizationId: string },
  Pick<WorkflowExecutionsTable, 'status' | 'output' | 'error' | 'transaction_hashes' | 'gas_used_wei' | 'completed_at'>
>((db: Store, a) =>
  db
    .selectFrom('workflow_executions')
    .select(['status', 'output', 'error', 'transaction_hashes', 'gas_used_wei', 'completed_at'])
    .where('id', '=', a.id)
    .where('organization_id', '=', a.organizationId),
);

/** A run's status and outcome (what `wait` answers), without the graph and input a full row carries. */
export async function getExecutionOutcome(store: Store, organizationId: string, executionId: string): Promise<RunOutcome> {
  const row = await first(selectOutcome, store, { id: executionId, organizationId });
  if (!row) throw executionNotFound(executionId);
  return {
    status: row.status,
    output: parseJson(row.output, null),
    error: row.error,
    transactionHashes: parseJson(row.transaction_hashes, []),
    gasUsedWei: row.gas_used_wei,
    completedAt: row.completed_at,
  };
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
  /** Chain triggers: the block, log or transfer the run is for; a second insert with the same key fails (unique per workflow). */
  triggerOccurrence?: string;
  /** `awaiting_payment`: written but not runnable until released (paid workflow calls settle first). */
  initialStatus?: 'pending' | 'awaiting_payment';
  /** Written already claimed by this worker (status `running`, its lease): saves the claim's write when the worker has a free slot. */
  claimedBy?: { owner: string; leaseMs: number };
  /** Written as a run that ended at once without running a step (status `error`), saying why: a triggered run past a bound. */
  skipped?: SkippedRun;
}

/** Why a run was written as ended at once: its `error` and `errorContext` (with `reason`). */
export interface SkippedRun {
  error: string;
  context: Record<string, unknown>;
}

export interface CreatedExecution {
  id: string;
  replayed: boolean;
  status: string;
  /** The row as written (absent on a replay). */
  row?: WorkflowExecutionsTable;
}

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * Writes the pending execution row before anything runs. With an idempotency
 * key, a repeat of the same request within 24 hours returns the original
 * execution (`replayed`), a different request with the same key is a 409.
 * Given `via` (a transaction of the caller's, with a write the run must not
 * exist without), the row is written in it.
 */
export async function createExecution(store: Store, input: NewExecution, via?: Store): Promise<CreatedExecution> {
  // Without a key there is nothing to look up: one insert, atomic on its own. Committed with the other writes of
  // this turn of the event loop (group commit), before any step runs.
  const write = (trx: Store) => (input.idempotencyKey === undefined ? insertExecution(store, input, trx) : insertUnlessKeyed(store, input, trx));
  return via ? write(via) : groupCommit(store, write);
}

/** The keyed insert: the key's run within the window is answered instead (or a 409 for another body); an expired key is taken over. */
async function insertUnlessKeyed(store: Store, input: NewExecution, trx: Store): Promise<CreatedExecution> {
  const existing = await trx
    .selectFrom('workflow_executions')
    .select(['id', 'request_hash', 'created_at', 'status'])
    .where('workflow_id', '=', input.workflowId)
    .where('idempotency_key', '=', input.idempotencyKey!)
    .executeTakeFirst();
  if (existing && Date.parse(existing.created_at) > sharedNow() - IDEMPOTENCY_WINDOW_MS) {
    if (existing.request_hash !== input.requestHash) {
      throw new ServiceError(
        409,
        'idempotency_conflict',
        'This Idempotency-Key was already used with a different request body for this workflow; use a new key for a new request.',
        {
          retryable: false,
          originalExecutionId: existing.id,
        },
      );
    }
    return { id: existing.id, replayed: true, status: existing.status };
  }
  // An expired key is free again: detach it from the old run.
  if (existing) await trx.updateTable('workflow_executions').set({ idempotency_key: null }).where('id', '=', existing.id).execute();
  return insertExecution(store, input, trx);
}

const EXECUTION_COLUMNS: Record<keyof WorkflowExecutionsTable, true> = {
  id: true,
  workflow_id: true,
  organization_id: true,
  user_id: true,
  status: true,
  input: true,
  output: true,
  error: true,
  created_at: true,
  started_at: true,
  completed_at: true,
  graph: true,
  trigger_type: true,
  lease_owner: true,
  lease_expires_at: true,
  heartbeat_at: true,
  cancel_requested: true,
  error_context: true,
  idempotency_key: true,
  request_hash: true,
  transaction_hashes: true,
  gas_used_wei: true,
  scheduled_for: true,
  current_node_id: true,
  trigger_occurrence: true,
  data_pruned_at: true,
};
const insertExecutionRow = prepared<WorkflowExecutionsTable>((db: Store, row) => db.insertInto('workflow_executions').values(row), EXECUTION_COLUMNS);

async function insertExecution(store: Store, input: NewExecution, via: Store): Promise<CreatedExecution> {
  const id = newSortableId();
  const now = sharedNow();
  const createdAt = new Date(now).toISOString();
  const claim = input.claimedBy;
  const row: WorkflowExecutionsTable = {
    id,
    workflow_id: input.workflowId,
    organization_id: input.organizationId,
    user_id: input.userId,
    status: input.skipped ? 'error' : claim ? 'running' : (input.initialStatus ?? 'pending'),
    input: JSON.stringify(input.input),
    output: null,
    error: input.skipped?.error ?? null,
    created_at: createdAt,
    started_at: claim ? createdAt : null,
    completed_at: input.skipped ? createdAt : null,
    // A skipped run never runs: no copy of the graph (up to a request body), which would otherwise pile up uncounted
    // at every occurrence of a trigger whose organization is over its bounds.
    graph: input.skipped ? null : JSON.stringify(input.graph),
    trigger_type: input.triggerType,
    lease_owner: claim?.owner ?? null,
    lease_expires_at: claim ? now + claim.leaseMs : null,
    heartbeat_at: claim ? createdAt : null,
    cancel_requested: 0,
    error_context: input.skipped ? JSON.stringify(input.skipped.context) : null,
    idempotency_key: input.idempotencyKey ?? null,
    request_hash: input.requestHash ?? null,
    transaction_hashes: '[]',
    gas_used_wei: null,
    scheduled_for: input.scheduledFor ?? null,
    current_node_id: null,
    trigger_occurrence: input.triggerOccurrence ?? null,
    data_pruned_at: null,
  };
  await insertExecutionRow(store, row, via);
  return { id, replayed: false, status: row.status, row };
}

/** Takes a run in `from` for one worker: `running`, with its lease (compare-and-swap on the status). */
const claimFrom = (from: 'pending' | 'awaiting_payment') =>
  prepared<{ id: string; owner: string; leaseExpiresAt: number; now: string }, WorkflowExecutionsTable>((db: Store, a) =>
    db
      .updateTable('workflow_executions')
      .set({ status: 'running', lease_owner: a.owner, lease_expires_at: a.leaseExpiresAt, heartbeat_at: a.now, started_at: a.now })
      .where('id', '=', a.id)
      .where('status', '=', from)
      .returningAll(),
  );
const claim = claimFrom('pending');
// A paid call's run, claimed as its payment settles (gated-runs.ts): from `awaiting_payment` straight to `running`.
const claimAwaiting = claimFrom('awaiting_payment');

/** A claim's arguments: the run, its new owner and lease, and a write that goes with it (see claimAwaitingRow). */
type ClaimArgs = [store: Store, executionId: string, owner: string, leaseMs: number, alongside?: (via: Store) => Promise<unknown>];

/** Claims a pending execution for one worker (compare-and-swap on status); the claimed row, or undefined when another got it. */
export const claimExecutionRow = (...args: ClaimArgs) => claimRow(claim, ...args);

/**
 * Claims a run still `awaiting_payment` for one worker; undefined when it is no longer waiting (abandoned meanwhile).
 * `alongside` (the payment's settled record) is written with it (src/store/group-commit.ts, writeAlongside).
 */
export const claimAwaitingRow = (...args: ClaimArgs) => claimRow(claimAwaiting, ...args);

function claimRow(query: typeof claim, ...[store, executionId, owner, leaseMs, alongside]: ClaimArgs): Promise<WorkflowExecutionsTable | undefined> {
  const now = sharedNow();
  const args = { id: executionId, owner, leaseExpiresAt: now + leaseMs, now: new Date(now).toISOString() };
  // One UPDATE is atomic on PostgreSQL (a concurrent claimer waits for the row and re-checks `status`): no transaction, so no
  // wait on the store-wide writer lock. SQLite batches it with the other writes of this turn (group commit).
  return writeAlongside(store, alongside, (via) => first(query, store, args, via));
}

/**
 * PostgreSQL only: claims up to `limit` pending runs, whoever wrote them, for
 * one worker, oldest first, `FOR UPDATE SKIP LOCKED`, so instances taking work
 * at the same moment each get different runs. Organizations in `skip` (at
 * their share here) are left for later.
 */
export async function claimPendingRows(
  store: Store,
  owner: string,
  leaseMs: number,
  limit: number,
  skip: readonly string[],
): Promise<WorkflowExecutionsTable[]> {
  const now = sharedNow();
  const at = new Date(now).toISOString();
  const { rows } = await sql<WorkflowExecutionsTable>`
    update workflow_executions
    set status = 'running', lease_owner = ${owner}, lease_expires_at = ${now + leaseMs}, heartbeat_at = ${at}, started_at = ${at}
    where id in (
      select id from workflow_executions
      where status = 'pending' and not (organization_id = any(${[...skip]}::text[]))
      order by created_at, id
      limit ${limit}
      for update skip locked
    )
    and status = 'pending'
    returning *`.execute(store);
  return rows;
}

type HeartbeatArgs = { id: string; owner: string; leaseExpiresAt: number; now: string };
const renewLease = prepared<HeartbeatArgs, { cancel_requested: number | null }>((db: Store, a) =>
  db
    .updateTable('workflow_executions')
    .set({ lease_expires_at: a.leaseExpiresAt, heartbeat_at: a.now })
    .where('id', '=', a.id)
    .where('lease_owner', '=', a.owner)
    .where('status', 'in', ['running', 'unconfirmed'])
    .returning('cancel_requested'),
);
const renewLeaseAt = prepared<HeartbeatArgs & { currentNodeId: string | null }, { cancel_requested: number | null }>((db: Store, a) =>
  db
    .updateTable('workflow_executions')
    .set({ lease_expires_at: a.leaseExpiresAt, heartbeat_at: a.now, current_node_id: a.currentNodeId })
    .where('id', '=', a.id)
    .where('lease_owner', '=', a.owner)
    .where('status', 'in', ['running', 'unconfirmed'])
    .returning('cancel_requested'),
);
const selectCancelFlag = prepared<{ id: string }, { cancel_requested: number | null }>((db: Store, a) =>
  db.selectFrom('workflow_executions').select('cancel_requested').where('id', '=', a.id),
);

export async function heartbeat(
  store: Store,
  executionId: string,
  owner: string,
  leaseMs: number,
  currentNodeId?: string | null,
): Promise<{ cancelRequested: boolean; owned: boolean }> {
  const now = sharedNow();
  const args = { id: executionId, owner, leaseExpiresAt: now + leaseMs, now: new Date(now).toISOString() };
  // One statement renews the lease and reads the cancel flag.
  const row = currentNodeId === undefined ? await first(renewLease, store, args) : await first(renewLeaseAt, store, { ...args, currentNodeId });
  if (row) return { owned: true, cancelRequested: row.cancel_requested === 1 };
  return { owned: false, cancelRequested: await cancelFlag(store, executionId) };
}

export async function cancelFlag(store: Store, executionId: string): Promise<boolean> {
  return (await first(selectCancelFlag, store, { id: executionId }))?.cancel_requested === 1;
}

export interface Completion {
  status: ExecutionStatus;
  output?: Record<string, unknown> | null;
  error?: string | null;
  errorContext?: Record<string, unknown> | null;
  transactionHashes?: TransactionHashEntry[];
  gasUsedWei?: string | null;
  /** When the run ended (default: now), for a caller that reports the outcome it wrote. */
  completedAt?: string;
}

const complete = prepared<
  {
    id: string;
    owner: string;
    status: string;
    output: string | null;
    error: string | null;
    errorContext: string | null;
    transactionHashes: string;
    completedAt: string | null;
  },
  never
>((db: Store, a) =>
  db
    .updateTable('workflow_executions')
    .set({
      status: a.status,
      output: a.output,
      error: a.error,
      error_context: a.errorContext,
      transaction_hashes: a.transactionHashes,
      completed_at: a.completedAt,
      current_node_id: null,
    })
    .where('id', '=', a.id)
    .where('lease_owner', '=', a.owner)
    .where('status', 'in', ['running', 'unconfirmed']),
);
const completeTerminal = prepared<Parameters<typeof complete>[1], never>((db: Store, a) =>
  db
    .updateTable('workflow_executions')
    .set({
      status: a.status,
      output: a.output,
      error: a.error,
      error_context: a.errorContext,
      transaction_hashes: a.transactionHashes,
      completed_at: a.completedAt,
      lease_expires_at: null,
      current_node_id: null,
    })
    .where('id', '=', a.id)
    .where('lease_owner', '=', a.owner)
    .where('status', 'in', ['running', 'unconfirmed']),
);

/** Records the outcome; only the lease owner may (a reaped run cannot be overwritten by a late worker). */
export async function completeExecution(store: Store, executionId: string, owner: string, completion: Completion, via: Store = store): Promise<boolean> {
  // The executor's usual outcome (output and hashes given, no gas figure) has a prepared statement; other shapes are built.
  if (completion.output !== undefined && completion.transactionHashes && completion.gasUsedWei === undefined) {
    const terminal = isTerminal(completion.status);
    const args = {
      id: executionId,
      owner,
      status: completion.status,
      output: JSON.stringify(completion.output),
      error: completion.error ?? null,
      errorContext: completion.errorContext ? JSON.stringify(completion.errorContext) : null,
      transactionHashes: JSON.stringify(completion.transactionHashes),
      completedAt: terminal ? (completion.completedAt ?? nowIso()) : null,
    };
    return (await changed(terminal ? completeTerminal : complete, store, args, via)) === 1;
  }
  const result = await via
    .updateTable('workflow_executions')
    .set({
      status: completion.status,
      output: completion.output === undefined ? undefined : JSON.stringify(completion.output),
      error: completion.error ?? null,
      error_context: completion.errorContext ? JSON.stringify(completion.errorContext) : null,
      ...(completion.transactionHashes ? { transaction_hashes: JSON.stringify(completion.transactionHashes) } : {}),
      ...(completion.gasUsedWei !== undefined ? { gas_used_wei: completion.gasUsedWei } : {}),
      completed_at: isTerminal(completion.status) ? (completion.completedAt ?? nowIso()) : null,
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
    await trx
      .updateTable('workflow_executions')
      .set({ transaction_hashes: JSON.stringify(list) })
      .where('id', '=', executionId)
      .execute();
  });
}

/** Re-reads a run's claimed transactions from chain: the entries with receipt fields, and the run's gas total. */
export type VerifyHashes = (entries: TransactionHashEntry[]) => Promise<{ entries: TransactionHashEntry[]; gasUsedWei: string | null }>;

/**
 * Running executions whose lease lapsed: their worker died. They end as
 * system_error, with context; the hashes they claimed go through `verify`
 * first, so the run is never seen ended without its receipts (as a finished
 * run's are). A reaped run never reaches the worker's commit that adds its data
 * to the day's budget, so what it keeps (graph copy, input, the steps it
 * logged) is charged as it is reaped.
 */
export async function reapExpired(store: Store, runDataPerOrgPerDayBytes: number, verify?: VerifyHashes, now = sharedNow()): Promise<string[]> {
  const stale = await store
    .selectFrom('workflow_executions')
    .select([
      'id',
      'organization_id',
      'lease_owner',
      'heartbeat_at',
      'current_node_id',
      'status',
      'transaction_hashes',
      sql<number>`coalesce(length(graph), 0) + coalesce(length(input), 0)`.as('kept_chars'),
    ])
    .where('status', 'in', ['running'])
    .where('lease_expires_at', '<', now)
    .execute();
  const reaped: string[] = [];
  for (const row of stale) {
    // The step that was running when the worker died, from its log row (committed before it acted); else the node the last
    // lease renewal recorded, which can lag a node behind (renewals are at most one a second).
    const running = await store
      .selectFrom('workflow_execution_logs')
      .select('node_id')
      .where('execution_id', '=', row.id)
      .where('status', '=', 'running')
      .orderBy('seq', 'desc')
      .executeTakeFirst();
    const currentNodeId = running?.node_id ?? row.current_node_id ?? null;
    const claimed = parseJson<TransactionHashEntry[]>(row.transaction_hashes, []);
    // A chain that cannot be read must not keep the run from ending: it ends with its hashes unverified.
    const verified = verify && claimed.length > 0 ? await verify(claimed).catch(() => undefined) : undefined;
    const ended = await groupCommit(store, async (trx) => {
      const result = await trx
        .updateTable('workflow_executions')
        .set({
          ...(verified ? { transaction_hashes: JSON.stringify(verified.entries), gas_used_wei: verified.gasUsedWei } : {}),
          status: 'system_error',
          error: 'The run stopped making progress (its worker stopped or lost its lease) and was ended by the reaper.',
          error_context: JSON.stringify({
            reason: 'lease_expired',
            leaseOwner: row.lease_owner,
            lastHeartbeatAt: row.heartbeat_at,
            currentNodeId,
            reapedAt: new Date(now).toISOString(),
          }),
          completed_at: new Date(now).toISOString(),
          lease_expires_at: null,
        })
        .where('id', '=', row.id)
        .where('status', '=', row.status)
        .where('lease_expires_at', '<', now)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      const logged = await trx
        .selectFrom('workflow_execution_logs')
        .select(sql<number>`coalesce(sum(coalesce(length(input), 0) + coalesce(length(output), 0)), 0)`.as('chars'))
        .where('execution_id', '=', row.id)
        .executeTakeFirst();
      await recordRunData(store, row.organization_id, Number(row.kept_chars) + Number(logged?.chars ?? 0), runDataPerOrgPerDayBytes, trx, now);
      return true;
    });
    if (ended) {
      // Steps that were mid-flight end with the run.
      await store
        .updateTable('workflow_execution_logs')
        .set({ status: 'error', error: 'Interrupted: the run was reaped', completed_at: new Date(now).toISOString() })
        .where('execution_id', '=', row.id)
        .where('status', 'in', ['pending', 'running'])
        .execute();
      reaped.push(row.id);
    }
  }
  return reaped;
}

/**
 * Organizations with pending runs, in id order after `after` (wrapping round),
 * at most `limit`: each is one seek in the partial index of pending runs
 * (migration 022), so the cost is per organization found, not per pending run.
 */
async function organizationsWithPending(store: Store, after: string, limit: number): Promise<string[]> {
  const pending = readVia(store, 'workflow_executions', 'workflow_executions_pending_org');
  const walk = async (from: string, n: number) =>
    (
      await sql<{ org: string | null }>`
        with recursive orgs(org, n) as (
          select (select min(organization_id) from ${pending} where status = 'pending' and organization_id > ${from}), 1
          union all
          select (select min(organization_id) from ${pending} where status = 'pending' and organization_id > orgs.org), orgs.n + 1
          from orgs where orgs.org is not null and orgs.n < ${n}
        )
        select org from orgs where org is not null`.execute(store)
    ).rows.map((r) => r.org!);
  const found = await walk(after, limit);
  if (found.length >= limit || after === '') return found;
  const wrapped = (await walk('', limit - found.length)).filter((org) => org <= after && !found.includes(org));
  return [...found, ...wrapped];
}

/**
 * Pending runs for the sweep to queue, interleaved across organizations (each
 * one's oldest first, then each one's second, ...), so one organization's
 * backlog cannot fill the batch and starve the others. It reads at most
 * `limit` organizations and `limit` runs of each through the pending index,
 * however many runs wait; the next sweep starts after `resumeAfter`, so with
 * more than `limit` organizations waiting none is always left out.
 */
export async function pendingExecutionIds(
  store: Store,
  limit = 100,
  after = '',
): Promise<{ runs: { id: string; organizationId: string }[]; resumeAfter: string }> {
  const organizations = await organizationsWithPending(store, after, limit);
  if (organizations.length === 0) return { runs: [], resumeAfter: '' };
  const oldest = (organizationId: string) =>
    store
      .selectFrom('workflow_executions')
      .select(['id', 'organization_id', 'created_at'])
      .where('status', '=', 'pending')
      .where('organization_id', '=', organizationId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit);
  const perOrganization = await Promise.all(organizations.map((organizationId) => oldest(organizationId).execute()));
  const runs: { id: string; organizationId: string }[] = [];
  for (let turn = 0; runs.length < limit; turn++) {
    const due = perOrganization.flatMap((rows) => (rows[turn] ? [rows[turn]] : []));
    if (due.length === 0) break;
    due.sort((x, y) => (x.created_at < y.created_at ? -1 : x.created_at > y.created_at ? 1 : 0));
    for (const row of due.slice(0, limit - runs.length)) runs.push({ id: row.id, organizationId: row.organization_id });
  }
  return { runs, resumeAfter: organizations.length < limit ? '' : organizations.at(-1)! };
}

/**
 * Asks a run to stop at its next node boundary; a run that has not started is cancelled at once. `requested` is false
 * when the run had already ended (nothing was recorded). A run cancelled before it started never reaches the worker's
 * commit that adds its data to the day's budget, yet keeps its graph copy and input (up to a request body each): they
 * are charged in the cancel's own transaction, else starting and cancelling queued runs stored data free of the budget.
 */
export async function requestCancel(
  store: Store,
  organizationId: string,
  executionId: string,
  runDataPerOrgPerDayBytes: number,
): Promise<{ status: string; requested: boolean }> {
  const row = await getExecutionRow(store, organizationId, executionId);
  if (isTerminal(row.status)) return { status: row.status, requested: false };
  const cancelledPending = await groupCommit(store, async (trx) => {
    const immediate = await trx
      .updateTable('workflow_executions')
      .set({ status: 'cancelled', cancel_requested: 1, error: 'Cancelled before it started', completed_at: nowIso() })
      .where('id', '=', executionId)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (Number(immediate.numUpdatedRows) !== 1) return false;
    await recordRunData(store, organizationId, runDataChars(row, 0), runDataPerOrgPerDayBytes, trx);
    return true;
  });
  if (cancelledPending) return { status: 'cancelled', requested: true };
  await store.updateTable('workflow_executions').set({ cancel_requested: 1 }).where('id', '=', executionId).execute();
  return { status: (await getExecutionRow(store, organizationId, executionId)).status, requested: true };
}

/** A run's log rows, newest first; `data` reads each input and output from its stored text (truncateLargeText reads only what it keeps). */
export async function listLogs(store: Store, executionId: string, data: LogData = parsedLogData): Promise<LogRecord[]> {
  const rows = await store
    .selectFrom('workflow_execution_logs')
    .selectAll()
    .where('execution_id', '=', executionId)
    .orderBy('seq', 'desc')
    .orderBy('id')
    .execute();
  return rows.map((row) => toLogRecord(row, data));
}

/**
 * The node, status and iteration of every log row, in listLogs' order: all a run's progress needs. Status
 * polls and MCP progress read these instead of the whole log, whose inputs and outputs can hold up to the
 * run's data limit (parsing 25 MB of them took about 250 ms of the event loop).
 */
export async function listLogStatuses(store: Store, executionId: string): Promise<LogStatus[]> {
  const rows = await store
    .selectFrom('workflow_execution_logs')
    .select(['node_id', 'status', 'iteration_index'])
    .where('execution_id', '=', executionId)
    .orderBy('seq', 'desc')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ nodeId: r.node_id, status: r.status, iterationIndex: r.iteration_index }));
}

/**
 * Input and output the run list carries in all: each run's are up to a request body and its run data (16 MiB),
 * so a hundred of them could be gigabytes read into the shared process by one request, and at 16 MiB one list
 * still cost about a second of CPU to parse and answer. Past it the list ends early (it always holds the newest
 * run); each run's full record is GET .../executions/{id}/details.
 */
export const LIST_DATA_CHARS = 4 * 1024 * 1024;
const LIST_PAGE = 20;

export async function listExecutions(store: Store, organizationId: string, workflowId: string, limit = 100): Promise<ExecutionRecord[]> {
  const ordered = store
    .selectFrom('workflow_executions')
    .where('workflow_id', '=', workflowId)
    .where('organization_id', '=', organizationId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc');
  const records: ExecutionRecord[] = [];
  let chars = 0;
  while (records.length < limit) {
    const last = records.at(-1);
    const after = last
      ? ordered.where((eb) => eb.or([eb('created_at', '<', last.createdAt), eb.and([eb('created_at', '=', last.createdAt), eb('id', '<', last.id)])]))
      : ordered;
    // Sizes first: a page of 20 runs could hold 340 MB, and only the rows within the bound are read whole.
    const sizes = await after
      .select(['id', sql<number>`coalesce(length(input), 0) + coalesce(length(output), 0)`.as('chars')])
      .limit(Math.min(LIST_PAGE, limit - records.length))
      .execute();
    const fitting: string[] = [];
    for (const row of sizes) {
      chars += Number(row.chars);
      if (records.length + fitting.length > 0 && chars > LIST_DATA_CHARS) break;
      fitting.push(row.id);
    }
    if (fitting.length > 0) {
      const rows = await ordered.select(RECORD_COLUMNS).where('id', 'in', fitting).execute();
      for (const row of rows) records.push(toExecutionRecord(row));
    }
    if (fitting.length < sizes.length || sizes.length < LIST_PAGE) return records;
  }
  return records;
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
