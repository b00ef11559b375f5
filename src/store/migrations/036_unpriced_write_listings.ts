import type { Kysely } from 'kysely';

/**
 * A write listing answers calldata with no run to charge for, so a price on one was advertised (402 offers, a
 * "costs" line in its MCP tool) while every call got the calldata free. Publishing now refuses it; listings saved
 * before lose the price they never charged, so what is offered is what happens.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const priced = db.selectFrom('workflow_listings').select('slug').where('workflow_type', '=', 'write').where('price', 'is not', null);
  // Only when there is one: the listings counter's statement trigger (migration 029) writes a row even for an update
  // of no rows, and a fresh database must stay empty (`flowgate db copy` copies only into an empty one).
  if (!(await priced.executeTakeFirst())) return;
  await db.updateTable('workflow_listings').set({ price: null }).where('workflow_type', '=', 'write').where('price', 'is not', null).execute();
}
