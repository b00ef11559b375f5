import net from 'node:net';
import type { Duplex } from 'node:stream';
import type pg from 'pg';
import { loadPg } from '../store/pg-module.ts';
import type { Config } from '../config.ts';
import { policyLookup } from '../net/egress-lookup.ts';
import { egressVerdict, type EgressAllowList } from '../net/egress-policy.ts';
import { checkSqliteStatement, resolveSqlitePath, SQLITE_PATH_UNAVAILABLE, SqliteGuardError } from './sqlite-guard.ts';
import { runSqliteJob } from './sqlite-process.ts';
import { rowChars } from './row-chars.ts';
import { connectionStringProblem } from './pg-connection-string.ts';

/**
 * Connections to `database` integrations: run one statement on a SQLite file
 * or a PostgreSQL server with positional parameters, bounded in rows, in the
 * size of the result and in time. The bounds are enforced on this side: a
 * PostgreSQL server is the tenant's (it may ignore statement_timeout or send
 * one row of a gigabyte), and the gateway's process is shared by every tenant.
 */

/** A failure worth showing to the caller as it is (no connection secrets inside). */
export class DatabaseError extends Error {}

const PARAM_PATTERN = /__FLOWGATE_PARAM_(\d+)__/g;
export const PARAM_TOKEN = (n: number) => `__FLOWGATE_PARAM_${n}__`;

export const MAX_ROWS = 10_000;
const QUERY_TIMEOUT_MS = 30_000;

const mebibytes = (chars: number) => `${(chars / (1024 * 1024)).toFixed(2)} MiB`;

/** The refusal of a result past the size bound (the run data limit: no larger result could be a step's output). */
export const resultTooLarge = (maxChars: number) =>
  `The query's result is larger than ${mebibytes(maxChars)} of JSON, the most one step may hold (FLOWGATE_RUN_DATA_LIMIT_BYTES); the query was stopped. Select fewer rows or columns, or add a LIMIT.`;

export const tooManyRows = (maxRows: number) => `The query returned more than ${maxRows} rows; add a LIMIT.`;

/**
 * Bytes a PostgreSQL server may send on one connection: three bytes per character of a result at the size bound
 * (UTF-8 of text, hex of bytea), plus room for the protocol's framing. A server past it is cut off mid-message, so
 * one row of a gigabyte is never buffered by the driver, and neither are endless notices.
 */
const wireBytesFor = (maxChars: number) => 3 * maxChars + 1024 * 1024;

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
  /** JSON characters a result's rows may come to: the run data limit (FLOWGATE_RUN_DATA_LIMIT_BYTES). */
  maxResultChars: number;
}

export const databaseAccess = (config: Pick<Config, 'sqliteIntegrationDir' | 'dataDir' | 'databaseAllowHosts' | 'engine'>): DatabaseAccess => ({
  sqliteDir: config.sqliteIntegrationDir,
  dataDir: config.dataDir,
  allowList: config.databaseAllowHosts,
  maxResultChars: config.engine.runDataLimitBytes,
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
  const outcome = await runSqliteJob(
    {
      file,
      allowWrites,
      sql: text,
      params: bound,
      maxRows: MAX_ROWS,
      tooManyRows: tooManyRows(MAX_ROWS),
      maxChars: access.maxResultChars,
      tooLarge: resultTooLarge(access.maxResultChars),
    },
    QUERY_TIMEOUT_MS,
    signal,
  );
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
 * `onSocket` receives it, so the caller can count what it reads and cut it.
 */
function guardedStream(allowList: EgressAllowList, onSocket: (socket: net.Socket) => void): () => net.Socket {
  return () => {
    const socket = new net.Socket();
    onSocket(socket);
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
        return egressVerdict(host, host, portNumber, allowList).allowed ? connect({ port: portNumber, host }) : refuse();
      }
      const refused = () => new Error('refused by the egress policy');
      return connect({ port: portNumber, host, lookup: policyLookup(allowList, portNumber, { noAddress: refused, refused }) });
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
  // Also checked on save; a row saved before that check is refused here, before pg reads anything it names.
  const problem = typeof config.connectionString === 'string' ? connectionStringProblem(config.connectionString) : undefined;
  if (problem) throw new DatabaseError(`This integration's connectionString is refused: it ${problem}. Update the integration.`);
  const pgModule = loadPg();
  /** The TCP socket, and the TLS stream over it when the integration asks for TLS (pg reads from that one then). */
  const streams: Duplex[] = [];
  /** Set when this side stopped the query (a bound was crossed): the step's error, whatever pg reports after the cut. */
  let stopped: string | undefined;
  const stop = (reason: string) => {
    stopped ??= reason;
    for (const stream of streams) stream.destroy();
  };
  const maxWireBytes = wireBytesFor(access.maxResultChars);
  let wireBytes = 0;
  /** Counts what the server sends as it arrives, so an oversized message is cut before the driver holds it whole. */
  const watch = (stream: Duplex) => {
    streams.push(stream);
    stream.on('data', (chunk: Buffer) => {
      wireBytes += chunk.length;
      if (wireBytes > maxWireBytes) stop(resultTooLarge(access.maxResultChars));
    });
  };
  const client = new pgModule.Client({
    connectionString: typeof config.connectionString === 'string' ? config.connectionString : undefined,
    host: typeof config.host === 'string' ? config.host : undefined,
    port: config.port === undefined ? undefined : Number(config.port),
    database: typeof config.database === 'string' ? config.database : undefined,
    user: typeof config.user === 'string' ? config.user : undefined,
    password: typeof config.password === 'string' ? config.password : undefined,
    ssl: config.ssl === true ? { rejectUnauthorized: true } : undefined,
    stream: guardedStream(access.allowList, watch),
    // Asked of the server; the timer below holds even when the server ignores it.
    statement_timeout: QUERY_TIMEOUT_MS,
    connectionTimeoutMillis: 10_000,
  });
  const abort = () => void client.end().catch(() => {});
  signal.addEventListener('abort', abort, { once: true });
  // The client reports socket errors on itself too; without a listener they would crash the process.
  client.on('error', () => {});
  let timer: NodeJS.Timeout | undefined;
  try {
    try {
      await client.connect();
    } catch (error) {
      if (stopped) throw new DatabaseError(stopped);
      // The server spoke the protocol (bad password, unknown database): its reason is useful and says nothing about other ports.
      if (error instanceof pgModule.DatabaseError) throw error;
      throw new DatabaseError(POSTGRES_UNREACHABLE);
    }
    // With TLS, pg reads the TLS stream it made over the socket (whose own reads stop): count that one from here.
    const current = client.connection.stream;
    if (!streams.includes(current)) watch(current);
    // The client-side query timeout: the connection is cut, whatever the server does.
    timer = setTimeout(() => stop(`The query ran longer than ${QUERY_TIMEOUT_MS / 1000} s and was stopped.`), QUERY_TIMEOUT_MS);
    // Rows are taken one by one as they arrive (a Query with a row listener and no callback keeps none itself),
    // counted, and the connection cut at the first one past a bound: never a whole oversized result in memory.
    const query = new pgModule.Query({
      text: sql.replace(PARAM_PATTERN, (_m, n: string) => `$${n}`),
      values: params.map((p) => (p === undefined ? null : p)),
    });
    const rows: unknown[] = [];
    let chars = 0;
    query.on('row', (row: unknown) => {
      if (stopped) return;
      if (rows.length >= MAX_ROWS) return stop(tooManyRows(MAX_ROWS));
      chars += rowChars(row) + 1;
      if (chars > access.maxResultChars) return stop(resultTooLarge(access.maxResultChars));
      rows.push(row);
    });
    const results = await new Promise<pg.QueryResult | pg.QueryResult[]>((resolve, reject) => {
      query.on('end', resolve);
      query.on('error', reject);
      client.query(query);
    });
    if (stopped) throw new DatabaseError(stopped);
    // Several statements in one text answer one result each; their rows and counts add up.
    const counts = (Array.isArray(results) ? results : [results]).map((r) => r?.rowCount);
    return { rows, rowCount: counts.every((n) => typeof n === 'number') ? counts.reduce((a, n) => a + (n as number), 0) : rows.length };
  } catch (error) {
    if (stopped) throw new DatabaseError(stopped);
    if (error instanceof DatabaseError) throw error;
    // Driver messages can echo connection details; keep only the database's own reason.
    const message = error instanceof Error ? error.message.replace(/postgres(ql)?:\/\/\S+/gi, '[connection string]') : String(error);
    throw new DatabaseError(`The database refused the query: ${message}`);
  } finally {
    clearTimeout(timer);
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
