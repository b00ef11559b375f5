import { sql } from 'kysely';
import { sharedNow } from '../store/clock.ts';
import type { Store } from '../store/db.ts';
import { readVia } from '../store/dialect.ts';
import { TERMINAL_STATUSES } from './executions.ts';

/**
 * Run data retention (FLOWGATE_RUN_DATA_RETENTION_DAYS). A finished run older
 * than the retention keeps its record (status, times, error, transaction
 * hashes, gas: what run history, analytics and payment records read) and
 * loses its data: step logs, input, output and its copy of the graph. Each
 * run is bounded, and so is each organization's day, but days add up: without
 * this the database every tenant shares grows for as long as the gateway runs.
 * Analytics rollups count none of those columns, so totals do not change.
 */

const BATCH = 200;
const DAY_MS = 86_400_000;

/**
 * Prunes every finished run created more than `retentionDays` before `now`, in
 * batches of BATCH runs, each one transaction, with the event loop free
 * between them; it ends early, between batches, once `keepGoing` says no (the
 * gateway stopping). Idempotent, so instances sharing a database may prune at
 * the same time. Returns how many runs it pruned.
 */
export async function pruneOldRunData(store: Store, retentionDays: number, keepGoing: () => boolean = () => true, now = sharedNow()): Promise<number> {
  const cutoff = new Date(now - retentionDays * DAY_MS).toISOString();
  const prunedAt = new Date(now).toISOString();
  let pruned = 0;
  for (;;) {
    const { rows } = await sql<{ id: string }>`
      select id from ${readVia(store, 'workflow_executions', 'workflow_executions_unpruned')}
      where data_pruned_at is null and created_at < ${cutoff} and status in (${sql.join(TERMINAL_STATUSES)})
      order by created_at, id limit ${BATCH}`.execute(store);
    const ids = rows.map((r) => r.id);
    if (ids.length === 0) return pruned;
    await store.transaction().execute(async (trx) => {
      await trx.deleteFrom('workflow_execution_logs').where('execution_id', 'in', ids).execute();
      await trx
        .updateTable('workflow_executions')
        .set({ graph: null, input: null, output: null, data_pruned_at: prunedAt })
        .where('id', 'in', ids)
        .where('data_pruned_at', 'is', null)
        .execute();
    });
    pruned += ids.length;
    if (ids.length < BATCH || !keepGoing()) return pruned;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
