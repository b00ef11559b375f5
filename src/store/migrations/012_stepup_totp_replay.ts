import type { Kysely } from 'kysely';

/**
 * The RFC 6238 time step of the last TOTP code a user spent: a code is
 * accepted only for a later step, so one seen over a shoulder (or in a log
 * of a proxy) cannot be replayed within its 90-second window.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('totp_last_step', 'integer').execute();
}
