import type { Kysely } from 'kysely';

/**
 * Direct executions no request will finish (`pending` past any live request, `unconfirmed`) are resolved from the
 * chain by a sweep (src/execute/interrupted-sweep.ts); this index finds them without reading every execution.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('direct_executions_unfinished').on('direct_executions').columns(['status', 'created_at']).execute();
}
