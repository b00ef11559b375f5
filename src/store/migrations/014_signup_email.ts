import type { Kysely } from 'kysely';

/**
 * E-mail sign-up: a verification link carries the password (scrypt hash) and
 * name chosen in the sign-up that sent it, so whoever follows a link gets the
 * password of that request, never one set later by someone else for the same
 * address (pre-verification account takeover).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('email_tokens').addColumn('pending_password_hash', 'text').execute();
  await db.schema.alterTable('email_tokens').addColumn('pending_name', 'text').execute();
  // Links that add a real address to a signed-in account (a wallet account's e-mail step-up factor).
  await db.schema.alterTable('email_tokens').addColumn('pending_email', 'text').execute();
  await db.schema.createIndex('email_tokens_user').on('email_tokens').column('user_id').execute();
}
