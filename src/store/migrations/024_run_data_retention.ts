import { sql, type Kysely } from 'kysely';

/**
 * Run data retention (src/engine/run-retention.ts): when a finished run's
 * data (step logs, input, output, its copy of the graph) was removed, and the
 * runs whose data is still kept, by age. Partial, so the hourly prune reads
 * the oldest unpruned runs only, never the history it already pruned.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workflow_executions').addColumn('data_pruned_at', 'text').execute();
  await db.schema
    .createIndex('workflow_executions_unpruned')
    .on('workflow_executions')
    .columns(['created_at', 'id'])
    .where(sql.ref('data_pruned_at'), 'is', null)
    .execute();
}
