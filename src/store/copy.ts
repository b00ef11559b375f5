import { sql, type Kysely } from 'kysely';
import type { SqliteHandle } from './db.ts';

/**
 * `flowgate db copy`: every row of a migrated SQLite store into a migrated,
 * empty PostgreSQL one, in one transaction (a failure leaves the target as
 * empty as it was). Nothing here names a table: the list, the columns and the
 * foreign-key order are read from the two migrated schemas, so a new
 * migration is copied without touching this file.
 */

/** Kysely's bookkeeping: each side keeps its own (the target was migrated by this build). */
const MIGRATION_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

/** PostgreSQL takes at most 65,535 parameters per statement; stay well below with room for wide tables. */
const MAX_PARAMETERS = 30_000;
const MAX_BATCH_ROWS = 1_000;

/** The target holds rows already, or the two schemas disagree: nothing was written. */
export class CopyRefused extends Error {}

export interface TableCopy {
  table: string;
  /** Rows in the SQLite snapshot. */
  source: number;
  /** Rows in PostgreSQL after the copy, counted inside the copy's transaction. */
  target: number;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The PostgreSQL schema's own tables (the current schema, Kysely's bookkeeping left out). */
async function postgresTables(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(db);
  return rows.map((r) => r.name).filter((name) => !MIGRATION_TABLES.has(name));
}

/** Tables of the PostgreSQL database that hold at least one row (any table of the current schema but Kysely's). */
export async function nonEmptyTables(db: Kysely<any>): Promise<string[]> {
  const found: string[] = [];
  for (const table of await postgresTables(db)) {
    const { rows } = await sql<{ any: boolean }>`select exists (select 1 from ${sql.raw(quote(table))}) as any`.execute(db);
    if (rows[0]?.any) found.push(table);
  }
  return found;
}

/** Parents before children, from the target's foreign keys (ties alphabetical, so the order is stable). */
async function inForeignKeyOrder(db: Kysely<any>, tables: string[]): Promise<string[]> {
  const { rows } = await sql<{ child: string; parent: string }>`select child.relname as child, parent.relname as parent
    from pg_constraint c
    join pg_class child on child.oid = c.conrelid
    join pg_class parent on parent.oid = c.confrelid
    join pg_namespace n on n.oid = child.relnamespace
    where c.contype = 'f' and n.nspname = current_schema()`.execute(db);
  const parents = new Map(tables.map((t) => [t, new Set<string>()]));
  for (const { child, parent } of rows) if (child !== parent) parents.get(child)?.add(parent);
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const ready = tables.filter((t) => !placed.has(t) && [...parents.get(t)!].every((p) => placed.has(p) || !parents.has(p)));
    if (ready.length === 0) throw new CopyRefused(`the foreign keys of ${tables.filter((t) => !placed.has(t)).join(', ')} form a cycle`);
    for (const t of ready) {
      ordered.push(t);
      placed.add(t);
    }
  }
  return ordered;
}

async function postgresColumns(db: Kysely<any>, table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select column_name as name from information_schema.columns
    where table_schema = current_schema() and table_name = ${table} order by ordinal_position`.execute(db);
  return rows.map((r) => r.name);
}

const sqliteTables = (source: SqliteHandle): string[] =>
  (source.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`).all() as { name: string }[])
    .map((r) => r.name)
    .filter((name) => !MIGRATION_TABLES.has(name));

const sqliteColumns = (source: SqliteHandle, table: string): string[] =>
  (source.prepare(`select name from pragma_table_info(?)`).all(table) as { name: string }[]).map((r) => r.name);

const sqliteCount = (source: SqliteHandle, table: string): number => (source.prepare(`select count(*) as n from ${quote(table)}`).get() as { n: number }).n;

/** Same tables, same columns on both sides (both were migrated by this build), or nothing is copied. */
function sameSchema(source: SqliteHandle, tables: string[], columns: Map<string, string[]>): void {
  const sourceTables = sqliteTables(source);
  const differ = (a: string[], b: string[]) => a.length !== b.length || [...a].sort().some((x, i) => x !== [...b].sort()[i]);
  if (differ(sourceTables, tables)) {
    throw new CopyRefused(`the two schemas differ after migrating: SQLite has ${sourceTables.join(', ')}; PostgreSQL has ${tables.join(', ')}`);
  }
  for (const table of tables) {
    const here = sqliteColumns(source, table);
    if (differ(here, columns.get(table)!)) {
      throw new CopyRefused(`table ${table} differs after migrating: SQLite has (${here.join(', ')}), PostgreSQL (${columns.get(table)!.join(', ')})`);
    }
  }
}

/** Tables with triggers of their own (the analytics rollups, migration 016). */
async function tablesWithUserTriggers(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select distinct c.relname as name from pg_trigger t
    join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where not t.tgisinternal and n.nspname = current_schema()`.execute(db);
  return rows.map((r) => r.name);
}

/** Serial and identity columns start after the copied rows (the migrations define none today). */
async function advanceSequences(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ table: string; column: string; sequence: string | null }>`select table_name as "table", column_name as "column",
      pg_get_serial_sequence(quote_ident(table_name), column_name) as sequence
    from information_schema.columns
    where table_schema = current_schema() and (column_default like 'nextval(%' or is_identity = 'YES')`.execute(db);
  for (const { table, column, sequence } of rows) {
    if (!sequence) continue;
    await sql`select setval(${sequence}, coalesce(max(${sql.raw(quote(column))}), 0) + 1, false) from ${sql.raw(quote(table))}`.execute(db);
  }
}

/**
 * Copies every table of `source` (an SQLite store migrated by this build)
 * into `target` (PostgreSQL, migrated by this build, every table empty).
 *
 * Rows are read from one SQLite read transaction (a consistent snapshot, even
 * if a gateway still writes) and inserted in batches inside one PostgreSQL
 * transaction. Tables kept by triggers (the analytics rollups) are copied as
 * they are, with the target's own triggers disabled meanwhile: inserting the
 * runs with the triggers on would count them a second time on top of the
 * copied rollups. Row counts are compared per table before committing.
 */
export async function copySqliteToPostgres(source: SqliteHandle, target: Kysely<any>): Promise<TableCopy[]> {
  const tables = await inForeignKeyOrder(target, await postgresTables(target));
  const columns = new Map<string, string[]>();
  for (const table of tables) columns.set(table, await postgresColumns(target, table));
  sameSchema(source, tables, columns);

  source.exec('begin');
  try {
    const sourceCounts = new Map(tables.map((t) => [t, sqliteCount(source, t)]));
    return await target.transaction().execute(async (trx) => {
      // Checked again inside the transaction: a gateway may have started on the target meanwhile.
      const taken = await nonEmptyTables(trx);
      if (taken.length > 0) throw new CopyRefused(`the target database is not empty (rows in ${taken.join(', ')})`);
      const triggered = await tablesWithUserTriggers(trx);
      // Owner's right, undone by a rollback like everything else here.
      for (const table of triggered) await sql`alter table ${sql.raw(quote(table))} disable trigger user`.execute(trx);

      const copies: TableCopy[] = [];
      for (const table of tables) {
        const names = columns.get(table)!;
        const batchRows = Math.max(1, Math.min(MAX_BATCH_ROWS, Math.floor(MAX_PARAMETERS / names.length)));
        const select = source.prepare(`select ${names.map(quote).join(', ')} from ${quote(table)}`).safeIntegers(true);
        let batch: Record<string, unknown>[] = [];
        const flush = async () => {
          if (batch.length > 0) await trx.insertInto(table).values(batch).execute();
          batch = [];
        };
        for (const row of select.iterate() as Iterable<Record<string, unknown>>) {
          batch.push(row);
          if (batch.length >= batchRows) await flush();
        }
        await flush();
        const { rows } = await sql<{ n: number }>`select count(*)::bigint as n from ${sql.raw(quote(table))}`.execute(trx);
        const copy = { table, source: sourceCounts.get(table)!, target: Number(rows[0]!.n) };
        if (copy.target !== copy.source) throw new Error(`table ${table}: ${copy.source} rows in SQLite but ${copy.target} in PostgreSQL; nothing was copied`);
        copies.push(copy);
      }

      for (const table of triggered) await sql`alter table ${sql.raw(quote(table))} enable trigger user`.execute(trx);
      await advanceSequences(trx);
      return copies;
    });
  } finally {
    source.exec('rollback');
  }
}
