import fs from 'node:fs';
import path from 'node:path';
import { PostgresAdapter, sql } from 'kysely';
import type { Store } from '../../src/store/db.ts';

/** Real refusals and raw reads of the database a test gateway runs on, SQLite or PostgreSQL alike. */

const onPostgres = (store: Store) => store.getExecutor().adapter instanceof PostgresAdapter;

/**
 * Makes the database itself refuse a write to `table` (a trigger raising an error, as a full disk would): every new
 * row, or with `column` every change of that column; returns the undo.
 */
async function refuseWrites(store: Store, table: string, column?: string): Promise<() => Promise<void>> {
  const name = column ? `refuse_${table}_${column}` : `refuse_${table}`;
  const event = column ? sql`UPDATE OF ${sql.ref(column)}` : sql`INSERT`;
  if (onPostgres(store)) {
    await sql`CREATE FUNCTION ${sql.raw(name)}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'database is full'; END $$`.execute(store);
    await sql`CREATE TRIGGER ${sql.raw(name)} BEFORE ${event} ON ${sql.table(table)} FOR EACH ROW EXECUTE FUNCTION ${sql.raw(name)}()`.execute(store);
    return async () => {
      await sql`DROP TRIGGER ${sql.raw(name)} ON ${sql.table(table)}`.execute(store);
      await sql`DROP FUNCTION ${sql.raw(name)}()`.execute(store);
    };
  }
  await sql`CREATE TRIGGER ${sql.raw(name)} BEFORE ${event} ON ${sql.table(table)} BEGIN SELECT RAISE(ABORT, 'database is full'); END`.execute(store);
  return async () => void (await sql`DROP TRIGGER ${sql.raw(name)}`.execute(store));
}

/** A paid run's link to its payment refused (the write that follows writing the run). */
export const refusePaymentLinks = (store: Store) => refuseWrites(store, 'payments', 'execution_id');

/** Every change of a spend reservation's status refused (settling it spent or released). */
export const refuseSpendSettlements = (store: Store) => refuseWrites(store, 'spend_reservations', 'status');

/** Every new run refused. */
export const refuseRunInserts = (store: Store) => refuseWrites(store, 'workflow_executions');

/** Every new audit row refused. */
export const refuseAuditInserts = (store: Store) => refuseWrites(store, 'audit_log');

/**
 * Records every status each run takes, in order, as the database sees it (triggers on insert and on a status change):
 * `statuses(id)` lists one run's. A state held only between two statements of the gateway still shows.
 */
export async function recordRunStatuses(store: Store): Promise<{ statuses(executionId: string): Promise<string[]> }> {
  if (onPostgres(store)) {
    await sql`CREATE TABLE test_run_statuses (n serial PRIMARY KEY, execution_id text NOT NULL, status text NOT NULL)`.execute(store);
    await sql`CREATE FUNCTION test_run_statuses() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status THEN
        INSERT INTO test_run_statuses (execution_id, status) VALUES (NEW.id, NEW.status);
      END IF;
      RETURN NEW; END $$`.execute(store);
    await sql`CREATE TRIGGER test_run_statuses AFTER INSERT OR UPDATE ON workflow_executions FOR EACH ROW EXECUTE FUNCTION test_run_statuses()`.execute(store);
  } else {
    await sql`CREATE TABLE test_run_statuses (n INTEGER PRIMARY KEY AUTOINCREMENT, execution_id TEXT NOT NULL, status TEXT NOT NULL)`.execute(store);
    await sql`CREATE TRIGGER test_run_statuses_insert AFTER INSERT ON workflow_executions BEGIN
      INSERT INTO test_run_statuses (execution_id, status) VALUES (NEW.id, NEW.status); END`.execute(store);
    await sql`CREATE TRIGGER test_run_statuses_update AFTER UPDATE OF status ON workflow_executions WHEN OLD.status <> NEW.status BEGIN
      INSERT INTO test_run_statuses (execution_id, status) VALUES (NEW.id, NEW.status); END`.execute(store);
  }
  return {
    async statuses(executionId) {
      const { rows } = await sql<{ status: string }>`SELECT status FROM test_run_statuses WHERE execution_id = ${executionId} ORDER BY n`.execute(store);
      return rows.map((r) => r.status);
    },
  };
}

/**
 * Everything the database holds, as text: SQLite's files on disk (after a WAL
 * checkpoint), or every row of every PostgreSQL table rendered as text.
 */
export async function storedText(store: Store, dataDir: string): Promise<string> {
  if (onPostgres(store)) {
    const tables = await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(store);
    const parts: string[] = [];
    for (const { name } of tables.rows) {
      const { rows } = await sql<{ text: string | null }>`select string_agg(t::text, ' ') as text from ${sql.table(name)} t`.execute(store);
      parts.push(rows[0]?.text ?? '');
    }
    return parts.join('\n');
  }
  await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(store);
  return ['flowgate.sqlite', 'flowgate.sqlite-wal']
    .map((file) => path.join(dataDir, file))
    .filter((full) => fs.existsSync(full))
    .map((full) => fs.readFileSync(full).toString('latin1'))
    .join('\n');
}
