import type { Kysely } from 'kysely';

/**
 * Nonces handed out per (chain, address) when several gateway instances share
 * one database (src/chains/shared-nonces.ts): `allocated` (taken by a send
 * about to broadcast), `sent` (the node answered, or may have) or `free` (the
 * node refused the bytes: the next send reuses it). `at` is when the state was
 * last set, in epoch milliseconds; a row stuck `allocated` past a grace period
 * belongs to an instance that died before broadcasting. Rows below the node's
 * pending count are pruned.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('chain_nonces')
    .addColumn('chain_id', 'integer', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('nonce', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('at', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('chain_nonces_pk', ['chain_id', 'address', 'nonce'])
    .execute();
}
