import type { Kysely } from 'kysely';

/**
 * Facts about the database itself, one row each. The first is the master-key
 * check: a keyed digest (never the key) of the master key that sealed this
 * database's wallets and credentials, so an instance started with another
 * key is refused at start instead of failing on the first wallet it opens.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('store_settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}
