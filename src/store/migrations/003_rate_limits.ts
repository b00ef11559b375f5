import type { Kysely } from 'kysely';

/**
 * Request-rate counters in the shared database, so every gateway process of a
 * deployment spends one budget. The layout is the one rate-limiter-flexible's
 * SQLite store reads and writes (key, points, expire in ms).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rate_limits')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('points', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('expire', 'integer')
    .execute();
}
