import type { Kysely } from 'kysely';

/**
 * A write listing answers calldata with no run to charge for, so a price on one was advertised (402 offers, a
 * "costs" line in its MCP tool) while every call got the calldata free. Publishing now refuses it; listings saved
 * before lose the price they never charged, so what is offered is what happens.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.updateTable('workflow_listings').set({ price: null }).where('workflow_type', '=', 'write').where('price', 'is not', null).execute();
}
