import fs from 'node:fs';
import path from 'node:path';
import { PostgresAdapter, sql } from 'kysely';
import type { Store } from '../../src/store/db.ts';

/** Real refusals and raw reads of the database a test gateway runs on, SQLite or PostgreSQL alike. */

const onPostgres = (store: Store) => store.getExecutor().adapter instanceof PostgresAdapter;

/** Makes the database itself refuse every new row of `table` (a trigger raising an error, as a full disk would); returns the undo. */
async function refuseInserts(store: Store, table: string): Promise<() => Promise<void>> {
  const name = `refuse_${table}`;
  if (onPostgres(store)) {
    await sql`CREATE FUNCTION ${sql.raw(name)}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'database is full'; END $$`.execute(store);
    await sql`CREATE TRIGGER ${sql.raw(name)} BEFORE INSERT ON ${sql.table(table)} FOR EACH ROW EXECUTE FUNCTION ${sql.raw(name)}()`.execute(store);
    return async () => {
      await sql`DROP TRIGGER ${sql.raw(name)} ON ${sql.table(table)}`.execute(store);
      await sql`DROP FUNCTION ${sql.raw(name)}()`.execute(store);
    };
  }
  await sql`CREATE TRIGGER ${sql.raw(name)} BEFORE INSERT ON ${sql.table(table)} BEGIN SELECT RAISE(ABORT, 'database is full'); END`.execute(store);
  return async () => void (await sql`DROP TRIGGER ${sql.raw(name)}`.execute(store));
}

/** Every new run refused. */
export const refuseRunInserts = (store: Store) => refuseInserts(store, 'workflow_executions');

/** Every new audit row refused. */
export const refuseAuditInserts = (store: Store) => refuseInserts(store, 'audit_log');

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
