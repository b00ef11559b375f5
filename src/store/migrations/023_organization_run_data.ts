import type { Kysely } from 'kysely';

/**
 * How much run data (steps' inputs and outputs as JSON text) each organization
 * wrote per UTC day: the running sums its daily run-data budget is checked
 * against (src/engine/run-data-budget.ts), added to in the commit that ends a run.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organization_run_data')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('chars', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('organization_run_data_pk', ['organization_id', 'day'])
    .execute();
}
