import type { Kysely } from 'kysely';

/**
 * The scheduler shares each tick between organizations (src/engine/scheduler.ts): it finds every organization's
 * earliest schedule by seeking this index, one organization after another, so a tenant holding thousands of due
 * schedules costs one seek a tick rather than a scan of its backlog.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('workflow_schedules_org_due').on('workflow_schedules').columns(['organization_id', 'next_run_at']).execute();
}
