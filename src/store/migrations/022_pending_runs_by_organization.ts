import { sql, type Kysely } from 'kysely';

/**
 * The runs each organization has waiting for a slot (status `pending`), by
 * organization and age. Partial, so only waiting runs are in it: a run written
 * already claimed (the common case) never touches it. Counting an
 * organization's waiting runs before writing one more (src/engine/run-queue.ts)
 * reads these entries only, not every pending run nor the organization's history.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('workflow_executions_pending_org')
    .on('workflow_executions')
    .columns(['organization_id', 'created_at', 'id'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}
