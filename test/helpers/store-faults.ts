import fs from 'node:fs';
import path from 'node:path';
import { PostgresAdapter, sql } from 'kysely';
import type { Store } from '../../src/store/db.ts';

/** Real refusals and raw reads of the database a test gateway runs on, SQLite or PostgreSQL alike. */

const onPostgres = (store: Store) => store.getExecutor().adapter instanceof PostgresAdapter;

/** Makes the database itself refuse every new run (a trigger raising an error, as a full disk would); returns the undo. */
export async function refuseRunInserts(store: Store): Promise<() => Promise<void>> {
  if (onPostgres(store)) {
    await sql`CREATE FUNCTION refuse_runs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'database is full'; END $$`.execute(store);
    await sql`CREATE TRIGGER refuse_runs BEFORE INSERT ON workflow_executions FOR EACH ROW EXECUTE FUNCTION refuse_runs()`.execute(store);
    return async () => {
      await sql`DROP TRIGGER refuse_runs ON workflow_executions`.execute(store);
      await sql`DROP FUNCTION refuse_runs()`.execute(store);
    };
  }
  await sql`CREATE TRIGGER refuse_runs BEFORE INSERT ON workflow_executions BEGIN SELECT RAISE(ABORT, 'database is full'); END`.execute(store);
  return async () => void (await sql`DROP TRIGGER refuse_runs`.execute(store));
}

/** Makes the database refuse every new audit row (as a full disk would); returns the undo. */
export async function refuseAuditInserts(store: Store): Promise<() => Promise<void>> {
  if (onPostgres(store)) {
    await sql`CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'database is full'; END $$`.execute(store);
    await sql`CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit()`.execute(store);
    return async () => {
      await sql`DROP TRIGGER refuse_audit ON audit_log`.execute(store);
      await sql`DROP FUNCTION refuse_audit()`.execute(store);
    };
  }
  await sql`CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'database is full'); END`.execute(store);
  return async () => void (await sql`DROP TRIGGER refuse_audit`.execute(store));
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
