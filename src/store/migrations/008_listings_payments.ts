import type { Kysely } from 'kysely';

/**
 * The pay-per-call surface: listings (a workflow callable by slug, with its
 * price and input schema) and payment records. A payment is keyed by the
 * EIP-3009 authorization it carries (chain, token, payer, nonce), so the same
 * signed payment presented twice (x402 or MPP) finds the first record and
 * returns its execution instead of running or charging again.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('workflow_listings')
    .addColumn('slug', 'text', (c) => c.primaryKey())
    .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    /** `catalog` (workflows-catalog/ files, synced at start-up) or `published` (publish_workflow). */
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('workflow_type', 'text', (c) => c.notNull())
    .addColumn('chain_id', 'integer')
    /** Decimal USD string ("0.05"); null for a free workflow. */
    .addColumn('price', 'text')
    .addColumn('input_schema', 'text', (c) => c.notNull())
    .addColumn('output_fields', 'text', (c) => c.notNull())
    /** JSON {nodeId, path}: where output.result is read from the finished run. */
    .addColumn('result_source', 'text')
    .addColumn('protocols', 'text', (c) => c.notNull())
    .addColumn('listed', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('workflow_listings_workflow').on('workflow_listings').column('workflow_id').unique().execute();

  await db.schema
    .createTable('payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    /** `<chainId>:<token>:<payer>:<nonce>`, lowercase: one EIP-3009 authorization, whichever protocol carried it. */
    .addColumn('authorization_key', 'text', (c) => c.notNull().unique())
    /** SHA-256 of the signature: a replay must present the same signed payment, not just its (public) payer and nonce. */
    .addColumn('signature_hash', 'text', (c) => c.notNull())
    .addColumn('protocol', 'text', (c) => c.notNull())
    .addColumn('listing_slug', 'text', (c) => c.notNull())
    .addColumn('execution_id', 'text')
    /** verified → settled | failed. */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('amount', 'text', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('transaction_hash', 'text')
    /** JSON receipt returned with the response (and again on a replay). */
    .addColumn('receipt', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payments_execution').on('payments').column('execution_id').execute();
}
