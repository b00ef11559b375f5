import fs from 'node:fs';
import SQLite from 'better-sqlite3';
import pg from 'pg';

/**
 * Connections to `database` integrations: run one statement on a SQLite file
 * or a PostgreSQL server with positional parameters, bounded in rows and time.
 */

/** A failure worth showing to the caller as it is (no connection secrets inside). */
export class DatabaseError extends Error {}

const PARAM_PATTERN = /__FLOWGATE_PARAM_(\d+)__/g;
export const PARAM_TOKEN = (n: number) => `__FLOWGATE_PARAM_${n}__`;

export const MAX_ROWS = 10_000;
const QUERY_TIMEOUT_MS = 30_000;

export interface DatabaseConfig {
  driver?: unknown;
  path?: unknown;
  connectionString?: unknown;
  host?: unknown;
  port?: unknown;
  database?: unknown;
  user?: unknown;
  password?: unknown;
  ssl?: unknown;
}

function runSqlite(path: string, sql: string, params: unknown[]): { rows: unknown[]; rowCount: number } {
  if (!fs.existsSync(path)) throw new DatabaseError(`The SQLite database file of this integration does not exist.`);
  const db = new SQLite(path, { fileMustExist: true, timeout: 5_000 });
  try {
    // Anonymous `?` placeholders, with the values listed in the order the tokens appear.
    const order: number[] = [];
    const statement = db.prepare(
      sql.replace(PARAM_PATTERN, (_m, n: string) => {
        order.push(Number(n) - 1);
        return '?';
      }),
    );
    const bound = order.map((i) => (params[i] === undefined ? null : params[i]));
    if (statement.reader) {
      const rows: unknown[] = [];
      for (const row of statement.iterate(...bound)) {
        if (rows.length >= MAX_ROWS) throw new DatabaseError(`The query returned more than ${MAX_ROWS} rows; add a LIMIT.`);
        rows.push(row);
      }
      return { rows, rowCount: rows.length };
    }
    const result = statement.run(...bound);
    return { rows: [], rowCount: result.changes };
  } finally {
    db.close();
  }
}

async function runPostgres(config: DatabaseConfig, sql: string, params: unknown[], signal: AbortSignal): Promise<{ rows: unknown[]; rowCount: number }> {
  const client = new pg.Client({
    connectionString: typeof config.connectionString === 'string' ? config.connectionString : undefined,
    host: typeof config.host === 'string' ? config.host : undefined,
    port: config.port === undefined ? undefined : Number(config.port),
    database: typeof config.database === 'string' ? config.database : undefined,
    user: typeof config.user === 'string' ? config.user : undefined,
    password: typeof config.password === 'string' ? config.password : undefined,
    ssl: config.ssl === true ? { rejectUnauthorized: true } : undefined,
    statement_timeout: QUERY_TIMEOUT_MS,
    connectionTimeoutMillis: 10_000,
  });
  const abort = () => void client.end().catch(() => {});
  signal.addEventListener('abort', abort, { once: true });
  try {
    await client.connect();
    const result = await client.query({ text: sql.replace(PARAM_PATTERN, (_m, n: string) => `$${n}`), values: params.map((p) => (p === undefined ? null : p)) });
    if (result.rows.length > MAX_ROWS) throw new DatabaseError(`The query returned more than ${MAX_ROWS} rows; add a LIMIT.`);
    return { rows: result.rows, rowCount: result.rowCount ?? result.rows.length };
  } catch (error) {
    if (error instanceof DatabaseError) throw error;
    // Driver messages can echo connection details; keep only the database's own reason.
    const message = error instanceof Error ? error.message.replace(/postgres(ql)?:\/\/\S+/gi, '[connection string]') : String(error);
    throw new DatabaseError(`The database refused the query: ${message}`);
  } finally {
    signal.removeEventListener('abort', abort);
    await client.end().catch(() => {});
  }
}

/** Runs `sql` (parameters spelled with PARAM_TOKEN) against the integration's database. */
export async function queryDatabase(db: DatabaseConfig, sql: string, params: unknown[], signal: AbortSignal): Promise<{ rows: unknown[]; rowCount: number }> {
  if (db.driver === 'sqlite' && typeof db.path === 'string') return runSqlite(db.path, sql, params);
  if (db.driver === 'postgres') return runPostgres(db, sql, params, signal);
  throw new DatabaseError('Unsupported database driver; use sqlite (with path) or postgres.');
}
