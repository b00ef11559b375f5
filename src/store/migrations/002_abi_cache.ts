import type { Kysely } from 'kysely';

/** Explorer ABI cache: a verified ABI never changes for an address, so it is kept. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('abi_cache')
    .addColumn('chain_id', 'integer', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('abi', 'text', (c) => c.notNull())
    .addColumn('explorer_url', 'text')
    .addColumn('fetched_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('abi_cache_pk', ['chain_id', 'address'])
    .execute();
}
