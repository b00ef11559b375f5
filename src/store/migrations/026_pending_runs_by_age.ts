import { sql, type Kysely } from 'kysely';

/**
 * The runs waiting for a slot, oldest first, across organizations. Instances
 * sharing a PostgreSQL database take waiting runs oldest first
 * (claimPendingRows in src/engine/executions.ts), and without this index each
 * take sorted every waiting run of every organization to pick the first few.
 * Partial, like migration 022's index by organization: a run written already
 * claimed never enters it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('workflow_executions_pending_age')
    .on('workflow_executions')
    .columns(['created_at', 'id'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}
