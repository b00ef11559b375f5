import type { Kysely } from 'kysely';

/**
 * Chain triggers (Event, Block, Transfer). Each enabled workflow with one has
 * a cursor row: the last block whose occurrences were turned into runs,
 * advanced with compare-and-swap. Every run a chain trigger creates carries a
 * `trigger_occurrence` key (the block, log or transfer it is for), unique per
 * workflow, so an occurrence runs at most once across restarts and processes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workflow_executions').addColumn('trigger_occurrence', 'text').execute();
  await db.schema
    .createIndex('workflow_executions_trigger_occurrence')
    .on('workflow_executions')
    .columns(['workflow_id', 'trigger_occurrence'])
    .unique()
    .execute();

  await db.schema
    .createTable('chain_trigger_cursors')
    .addColumn('workflow_id', 'text', (c) => c.primaryKey().references('workflows.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('chain_id', 'integer', (c) => c.notNull())
    /** Canonical JSON of what is watched; a save that changes it restarts the cursor at the head. */
    .addColumn('spec', 'text', (c) => c.notNull())
    /** Last processed block; null until the chain head could be read (then the watcher starts there). */
    .addColumn('last_block', 'integer')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('chain_trigger_cursors_chain').on('chain_trigger_cursors').column('chain_id').execute();
}
