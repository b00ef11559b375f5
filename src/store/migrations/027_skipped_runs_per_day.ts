import type { Kysely } from 'kysely';

/**
 * How many skipped runs (triggered runs written as ended at once, past a
 * bound) each organization's day holds, beside its run data: the count their
 * daily bound is checked against (src/engine/skipped-runs.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('organization_run_data')
    .addColumn('skipped_runs', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
