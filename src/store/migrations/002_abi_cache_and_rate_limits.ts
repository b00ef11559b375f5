import type { Kysely } from 'kysely';

/** Explorer ABI cache and the shared (per-deployment, not per-process) rate-limit counters. */
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

  await db.schema
    .createTable('rate_limit_counters')
    .addColumn('bucket', 'text', (c) => c.primaryKey())
    .addColumn('window_start', 'integer', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .execute();
}
