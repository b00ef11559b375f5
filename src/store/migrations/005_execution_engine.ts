import type { Kysely } from 'kysely';

/**
 * What durable runs need: the graph snapshot a run executes, leases and
 * heartbeats for the worker that claimed it, cancel requests, idempotency per
 * workflow, recorded transaction hashes, and the schedules table whose
 * (workflow, occurrence) key makes every cron occurrence run at most once.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, type] of [
    ['graph', 'text'],
    ['trigger_type', 'text'],
    ['lease_owner', 'text'],
    ['lease_expires_at', 'integer'],
    ['heartbeat_at', 'text'],
    ['cancel_requested', 'integer'],
    ['error_context', 'text'],
    ['idempotency_key', 'text'],
    ['request_hash', 'text'],
    ['transaction_hashes', 'text'],
    ['gas_used_wei', 'text'],
    ['scheduled_for', 'text'],
    ['current_node_id', 'text'],
  ] as const) {
    await db.schema.alterTable('workflow_executions').addColumn(name, type).execute();
  }
  await db.schema.createIndex('workflow_executions_idempotency').on('workflow_executions').columns(['workflow_id', 'idempotency_key']).unique().execute();
  await db.schema.createIndex('workflow_executions_schedule').on('workflow_executions').columns(['workflow_id', 'scheduled_for']).unique().execute();
  await db.schema.createIndex('workflow_executions_status').on('workflow_executions').columns(['status', 'lease_expires_at']).execute();

  for (const [name, type] of [
    ['seq', 'integer'],
    ['iteration_index', 'integer'],
    ['for_each_node_id', 'text'],
  ] as const) {
    await db.schema.alterTable('workflow_execution_logs').addColumn(name, type).execute();
  }

  await db.schema
    .createTable('workflow_schedules')
    .addColumn('workflow_id', 'text', (c) => c.primaryKey().references('workflows.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('cron', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    /** Epoch milliseconds of the next occurrence; advanced with compare-and-swap. */
    .addColumn('next_run_at', 'integer', (c) => c.notNull())
    .addColumn('last_run_at', 'integer')
    .execute();
  await db.schema.createIndex('workflow_schedules_due').on('workflow_schedules').column('next_run_at').execute();
}
