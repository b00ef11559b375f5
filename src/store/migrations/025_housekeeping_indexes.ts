import type { Kysely } from 'kysely';

/**
 * Indexes for bounding what tenants store:
 * - the per-organization bounds on stored objects (src/org/quotas.ts) count an
 *   organization's rows before each create, and webhook keys and public tags
 *   had no index by organization, so each count (and the webhook key list)
 *   read every organization's rows;
 * - audit log retention (src/store/expired-rows.ts) deletes rows by age across
 *   organizations, which the (organization, time) index cannot serve.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('user_api_keys_organization').on('user_api_keys').column('organization_id').execute();
  await db.schema.createIndex('public_tags_created_by').on('public_tags').column('created_by_organization_id').execute();
  await db.schema.createIndex('audit_log_created').on('audit_log').column('created_at').execute();
}
