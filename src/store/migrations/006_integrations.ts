import type { Kysely } from 'kysely';

/**
 * Organization integrations (SPEC "Integration"): the non-secret part of the
 * configuration as JSON text, the credential fields sealed with the master
 * key (AES-256-GCM, aad `integration:<id>`) in `credentials_encrypted`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('integrations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('is_managed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('credentials_encrypted', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('integrations_organization_type').on('integrations').columns(['organization_id', 'type']).execute();
}
