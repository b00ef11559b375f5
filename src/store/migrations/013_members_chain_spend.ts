import type { Kysely } from 'kysely';

/**
 * Per-chain daily caps (organization_chain_caps, migration 011) need to know
 * which chain each reservation moved value on. Rows written before this
 * migration have no chain: they still count against the organization-wide
 * cap, and against no chain's cap.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('spend_reservations').addColumn('chain_id', 'integer').execute();
  await db.schema.createIndex('spend_reservations_org_chain_day').on('spend_reservations').columns(['organization_id', 'chain_id', 'day']).execute();
}
