import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import type pg from 'pg';
import type { Database } from './schema.ts';
import { migrationProvider, migrations } from './migrations/index.ts';
import { openPostgresStore } from './postgres.ts';

export type Store = Kysely<Database>;
export type SqliteHandle = SQLite.Database;

/** Opens the embedded SQLite database in WAL mode. `elsewhere` ends the refusal of a file that is not one: how to name the right directory. */
export function openSqlite(file: string, elsewhere = "set FLOWGATE_DATA_DIR to the directory that holds this gateway's data"): SqliteHandle {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  try {
    // The first statement is where a file that is not a database (or a damaged one) shows.
    sqlite.pragma('journal_mode = WAL');
  } catch (error) {
    sqlite.close();
    const code = (error as { code?: unknown }).code;
    if (code !== 'SQLITE_NOTADB' && code !== 'SQLITE_CORRUPT') throw error;
    throw new Error(`${file} is not a usable SQLite database (${(error as Error).message}): move it aside to start afresh, or ${elsewhere}`);
  }
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  return sqlite;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query afresh, and preparing costs more than running
 * most of ours; statements are reusable, so keep the recent ones (LRU).
 */
export function withStatementCache(sqlite: SqliteHandle) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SQLite.Statement {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql);
      } else {
        statement = sqlite.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

/** Domain code only ever sees this Kysely handle, over SQLite or PostgreSQL alike. */
export const kyselyOverSqlite = (sqlite: SqliteHandle): Store => new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });

export const openSqliteStore = (file: string): Store => kyselyOverSqlite(openSqlite(file));

export type StoreKind = 'sqlite' | 'postgres';

/** FLOWGATE_DATABASE_URL selects PostgreSQL; unset, the embedded SQLite file in the data directory. */
export const storeKind = (databaseUrl: string | undefined): StoreKind => (databaseUrl ? 'postgres' : 'sqlite');

/** The open store plus the raw client the rate limiter keeps its counters in (same database). */
export type OpenedStore = { store: Store } & ({ kind: 'sqlite'; sqlite: SqliteHandle } | { kind: 'postgres'; pool: pg.Pool });

export function openStore(options: { dataDir: string; databaseUrl: string | undefined }): OpenedStore {
  if (options.databaseUrl) return { kind: 'postgres', ...openPostgresStore(options.databaseUrl) };
  const sqlite = openSqlite(databaseFile(options.dataDir));
  return { kind: 'sqlite', sqlite, store: kyselyOverSqlite(sqlite) };
}

/**
 * Applies pending migrations (optionally only up to `target`); throws when one
 * fails. On PostgreSQL Kysely's Migrator holds an advisory lock and runs them in
 * one transaction, so instances starting together migrate once.
 */
export async function migrate(db: Store, target?: string): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = target ? await migrator.migrateTo(target) : await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Migrations the database has run that this build does not know: a newer Flowgate wrote it, and this one must not touch it. */
export async function unknownMigrations(db: Store): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((t) => t.name === 'kysely_migration')) return [];
  const rows = await (db as Kysely<any>).selectFrom('kysely_migration').select('name').execute();
  return rows.map((r) => String(r.name)).filter((name) => !Object.hasOwn(migrations, name));
}

/** A unique-constraint violation (SQLite `UNIQUE constraint failed`, PostgreSQL 23505 `... unique ...`): the row already exists. */
export const isUniqueViolation = (error: unknown): boolean => /UNIQUE|unique/.test(String(error));

export const databaseFile = (dataDir: string) => path.join(dataDir, 'flowgate.sqlite');

/** node-postgres errors that mean the server is gone or refusing connections (not a bad query). */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03']);

/** True when `error` is the database being unreachable (down, restarting, network), as opposed to a failing statement. */
export function isStoreUnreachable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || code.startsWith('08'))) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(String((error as Error).message));
}
