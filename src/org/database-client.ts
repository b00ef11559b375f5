import net from 'node:net';
import type pg from 'pg';
import { loadPg } from '../store/pg-module.ts';
import type { Config } from '../config.ts';
import { policyLookup } from '../net/egress-lookup.ts';
import { egressVerdict, type EgressAllowList } from '../net/egress-policy.ts';
import { checkSqliteStatement, resolveSqlitePath, SQLITE_PATH_UNAVAILABLE, SqliteGuardError } from './sqlite-guard.ts';
import { runSqliteJob } from './sqlite-process.ts';

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

export const DATABASE_ALLOW_HOSTS_VARIABLE = 'FLOWGATE_DATABASE_ALLOW_HOSTS';

/**
 * The one answer for every PostgreSQL connection failure before the server
 * speaks the protocol: refused by the egress policy, closed port, open port
 * of another service, timeout, DNS or TLS failure. It says nothing about the
 * port's state, so the test endpoint and the step are no port scanner.
 */
export const POSTGRES_UNREACHABLE = `Could not connect to a PostgreSQL server with this integration's settings. The host may be unreachable, not a PostgreSQL server, or refused by this gateway's egress policy (loopback, private and other non-public addresses are refused unless the operator lists them in ${DATABASE_ALLOW_HOSTS_VARIABLE}).`;

/** What the operator lets database integrations reach (from Config). */
export interface DatabaseAccess {
  /** Real path of FLOWGATE_SQLITE_INTEGRATION_DIR; undefined: the sqlite driver is off. */
  sqliteDir: string | undefined;
  dataDir: string;
  allowList: EgressAllowList;
}

export const databaseAccess = (config: Pick<Config, 'sqliteIntegrationDir' | 'dataDir' | 'databaseAllowHosts'>): DatabaseAccess => ({
  sqliteDir: config.sqliteIntegrationDir,
  dataDir: config.dataDir,
  allowList: config.databaseAllowHosts,
});

export interface DatabaseConfig {
  driver?: unknown;
  path?: unknown;
  allowWrites?: unknown;
  connectionString?: unknown;
  host?: unknown;
  port?: unknown;
  database?: unknown;
  user?: unknown;
  password?: unknown;
  ssl?: unknown;
}

/** SQLite codes that mean "this file cannot be opened as a database": answered like a missing file. */
const UNOPENABLE = ['SQLITE_CANTOPEN', 'SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_IOERR'];

async function runSqlite(
  access: DatabaseAccess,
  config: DatabaseConfig,
  sql: string,
  params: unknown[],
  signal: AbortSignal,
): Promise<{ rows: unknown[]; rowCount: number }> {
  const allowWrites = config.allowWrites === true;
  let file: string;
  try {
    file = resolveSqlitePath(access.sqliteDir, access.dataDir, String(config.path));
    checkSqliteStatement(sql, allowWrites);
  } catch (error) {
    if (error instanceof SqliteGuardError) throw new DatabaseError(error.message);
    throw error;
  }
  // Anonymous `?` placeholders, with the values listed in the order the tokens appear.
  const order: number[] = [];
  const text = sql.replace(PARAM_PATTERN, (_m, n: string) => {
    order.push(Number(n) - 1);
    return '?';
  });
  const bound = order.map((i) => (params[i] === undefined ? null : params[i]));
  const outcome = await runSqliteJob({ file, allowWrites, sql: text, params: bound, maxRows: MAX_ROWS }, QUERY_TIMEOUT_MS, signal);
  if (outcome.ok) return { rows: outcome.rows, rowCount: outcome.rowCount };
  if (outcome.kind !== 'sqlite') throw new DatabaseError(outcome.message);
  const code = outcome.code;
  if (code && UNOPENABLE.some((c) => code === c || code.startsWith(`${c}_`))) throw new DatabaseError(SQLITE_PATH_UNAVAILABLE);
  throw new DatabaseError(`The database refused the query: ${outcome.message}`);
}

/**
 * pg's socket, bound to the egress policy: the address connected to is the
 * one judged (checked inside the socket's own DNS lookup), and Unix sockets
 * are refused. pg calls `connect(port, host)`, or `connect(path)` for a socket.
 */
function guardedStream(allowList: EgressAllowList): () => net.Socket {
  return () => {
    const socket = new net.Socket();
    const connect = socket.connect.bind(socket) as (options: net.TcpSocketConnectOpts) => net.Socket;
    const refuse = () => {
      process.nextTick(() => socket.destroy(new Error('refused by the egress policy')));
      return socket;
    };
    socket.connect = ((port: unknown, host: unknown) => {
      const portNumber = Number(port);
      if (typeof host !== 'string' || !host || !Number.isInteger(portNumber) || portNumber < 1 || portNumber > 65535) return refuse();
      if (net.isIP(host)) {
        // Node skips the lookup for a literal address, so judge it here.
        return egressVerdict(host, host, allowList).allowed ? connect({ port: portNumber, host }) : refuse();
      }
      const refused = () => new Error('refused by the egress policy');
      return connect({ port: portNumber, host, lookup: policyLookup(allowList, { noAddress: refused, refused }) });
    }) as typeof socket.connect;
    return socket;
  };
}

async function runPostgres(
  access: DatabaseAccess,
  config: DatabaseConfig,
  sql: string,
  params: unknown[],
  signal: AbortSignal,
): Promise<{ rows: unknown[]; rowCount: number }> {
  const client = new (loadPg().Client)({
    connectionString: typeof config.connectionString === 'string' ? config.connectionString : undefined,
    host: typeof config.host === 'string' ? config.host : undefined,
    port: config.port === undefined ? undefined : Number(config.port),
    database: typeof config.database === 'string' ? config.database : undefined,
    user: typeof config.user === 'string' ? config.user : undefined,
    password: typeof config.password === 'string' ? config.password : undefined,
    ssl: config.ssl === true ? { rejectUnauthorized: true } : undefined,
    stream: guardedStream(access.allowList),
    statement_timeout: QUERY_TIMEOUT_MS,
    connectionTimeoutMillis: 10_000,
  });
  const abort = () => void client.end().catch(() => {});
  signal.addEventListener('abort', abort, { once: true });
  // The client reports socket errors on itself too; without a listener they would crash the process.
  client.on('error', () => {});
  try {
    try {
      await client.connect();
    } catch (error) {
      // The server spoke the protocol (bad password, unknown database): its reason is useful and says nothing about other ports.
      if (error instanceof loadPg().DatabaseError) throw error;
      throw new DatabaseError(POSTGRES_UNREACHABLE);
    }
    const result = await client.query({
      text: sql.replace(PARAM_PATTERN, (_m, n: string) => `$${n}`),
      values: params.map((p) => (p === undefined ? null : p)),
    });
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
export async function queryDatabase(
  access: DatabaseAccess,
  db: DatabaseConfig,
  sql: string,
  params: unknown[],
  signal: AbortSignal,
): Promise<{ rows: unknown[]; rowCount: number }> {
  if (db.driver === 'sqlite' && typeof db.path === 'string') return runSqlite(access, db, sql, params, signal);
  if (db.driver === 'postgres') return runPostgres(access, db, sql, params, signal);
  throw new DatabaseError('Unsupported database driver; use sqlite (with path) or postgres.');
}
