import type { Kysely } from 'kysely';

/**
 * A payment whose settlement outcome is not known yet (its transaction unmined when the call stopped waiting,
 * or the process stopped mid-settlement) is resolved from the chain later (src/catalog/pending-payments.ts):
 * `valid_before` (the authorization's validBefore, unix seconds) says when an unused authorization can no longer
 * be used, and the index finds the unresolved ones without reading every payment.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('payments').addColumn('valid_before', 'text').execute();
  await db.schema.createIndex('payments_unresolved').on('payments').columns(['status', 'updated_at']).execute();
}
