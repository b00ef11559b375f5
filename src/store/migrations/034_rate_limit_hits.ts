import type { Kysely } from 'kysely';

/**
 * One row per request counted by a sliding-window limit (the step-up retry
 * budget: SPEC Authentication rule 8 says "sliding window"). A fixed window
 * let 20 attempts through in a few seconds across its boundary; with every
 * request's time kept, any 15 minutes hold at most the limit. `expire` (epoch
 * ms) is when a row stops counting; refused requests are kept, marked, only
 * to record the first refusal of a run once.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rate_limit_hits')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('hit_at', 'integer', (c) => c.notNull())
    .addColumn('expire', 'integer', (c) => c.notNull())
    .addColumn('refused', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('rate_limit_hits_by_key').on('rate_limit_hits').columns(['key', 'expire']).execute();
}
