import { sql, type Kysely } from 'kysely';

/**
 * Analytics (SPEC "Analytics") reads runs of one organization by creation
 * time, newest first, across all its workflows and its direct executions.
 * Each index carries the columns the summary, time series and run pages
 * read, so those queries scan the index alone and never touch the rows:
 * they stay quick with a million runs stored. `id` follows `created_at` so
 * the runs page's keyset order (created_at, id) is the index order.
 * Workflow runs with transactions get a small partial index of their own:
 * the networks view reads only them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('workflow_executions_org_analytics')
    .on('workflow_executions')
    .columns(['organization_id', 'created_at', 'id', 'status', 'started_at', 'completed_at', 'gas_used_wei'])
    .execute();
  await db.schema
    .createIndex('workflow_executions_org_onchain')
    .on('workflow_executions')
    .columns(['organization_id', 'created_at'])
    .where(sql.ref('transaction_hashes'), '<>', '[]')
    .execute();
  // The new index starts with the old one's columns: the old one would only cost writes.
  await db.schema.dropIndex('direct_executions_org_created').execute();
  await db.schema
    .createIndex('direct_executions_org_analytics')
    .on('direct_executions')
    .columns(['organization_id', 'created_at', 'id', 'status', 'chain_id', 'completed_at', 'gas_used_wei'])
    .execute();
}
