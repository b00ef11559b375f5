import type { Kysely } from 'kysely';

/**
 * Step-up challenges (and their retry budget) of an API key or OAuth token
 * are that credential's own; the user's sessions share theirs. Keyed by user
 * alone, a leaked `mcp:admin` key spent the budget with unsigned attempts and
 * superseded the owner's live challenge, so the owner's own session could not
 * revoke that key for as long as the thief kept asking. Rows from before have
 * no credential and are simply never matched (a challenge lives 5 minutes).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('step_up_challenges').addColumn('credential_id', 'text').execute();
}
