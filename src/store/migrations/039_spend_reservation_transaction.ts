import type { Kysely } from 'kysely';

/**
 * A spend reservation notes the transaction its value moves in before that transaction is broadcast, so one its
 * sender never settled (a process killed mid-send, a receipt that could not be read) is settled from the chain by a
 * sweep (src/onchain/stale-reservations.ts): released when nothing was signed or the transaction reverted, spent when
 * it was mined. The index finds the reservations still held without reading every one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('spend_reservations').addColumn('transaction_hash', 'text').execute();
  await db.schema.createIndex('spend_reservations_held').on('spend_reservations').columns(['status', 'created_at']).execute();
}
