import type { Kysely } from 'kysely';

/**
 * Money paths (DESIGN "Money paths"):
 * - `direct_executions`: one row per direct-execution request, written before
 *   anything is signed; the signed transaction and its hash are stored before
 *   broadcast so a retry checks the chain instead of signing again.
 * - `idempotency_records`: SPEC "Idempotency record", unique per
 *   (organization, endpoint, key).
 * - `spend_reservations`: native value reserved against the daily cap by every
 *   write path (direct and workflow); amounts are wei/lamport decimal strings.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('direct_executions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('api_key_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('chain_id', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('from_address', 'text')
    .addColumn('to_address', 'text')
    .addColumn('value_wei', 'text', (c) => c.notNull().defaultTo('0'))
    .addColumn('transaction_hash', 'text')
    .addColumn('signed_transaction', 'text')
    .addColumn('receipts', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('result', 'text')
    .addColumn('error', 'text')
    .addColumn('gas_used_wei', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .execute();
  await db.schema.createIndex('direct_executions_org_created').on('direct_executions').columns(['organization_id', 'created_at']).execute();

  await db.schema
    .createTable('idempotency_records')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('execution_id', 'text')
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_records_pk', ['organization_id', 'endpoint', 'key'])
    .execute();

  await db.schema
    .createTable('spend_reservations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('asset', 'text', (c) => c.notNull()) // 'evm-native' | 'solana-native'
    .addColumn('day', 'text', (c) => c.notNull()) // UTC YYYY-MM-DD
    .addColumn('amount', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull()) // 'direct' | 'workflow'
    .addColumn('execution_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull()) // 'reserved' | 'spent' | 'released'
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('spend_reservations_org_day').on('spend_reservations').columns(['organization_id', 'asset', 'day']).execute();

  // Organization-configured caps (SPEC "Spend-cap data": dailyCapWei, dailySolanaCapLamports); null = use the default.
  await db.schema.alterTable('organizations').addColumn('daily_cap_wei', 'text').execute();
  await db.schema.alterTable('organizations').addColumn('daily_solana_cap_lamports', 'text').execute();
}
