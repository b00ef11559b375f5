import type pg from 'pg';
import { setSharedClockOffset } from './clock.ts';
import { loadPg } from './pg-module.ts';
import {
  CompiledQuery,
  DataTypeNode,
  Kysely,
  OperationNodeTransformer,
  PostgresDialect,
  PostgresDriver,
  type DatabaseConnection,
  type Driver,
  type KyselyPlugin,
  type PostgresDialectConfig,
  type TransactionSettings,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
} from 'kysely';
import type { Database } from './schema.ts';

/**
 * The PostgreSQL side of the store: everything that differs from SQLite lives
 * here, so migrations and domain queries are written once.
 */

/**
 * Migrations say `integer` for counters and millisecond times (lease expiry,
 * next schedule run, rate-limit expiry). SQLite integers are 64-bit; PostgreSQL
 * `integer` is 32-bit and would overflow on the first `Date.now()`. So the
 * schema builder's `integer` becomes `bigint` here.
 */
class WideIntegers extends OperationNodeTransformer {
  protected override transformDataType(node: DataTypeNode): DataTypeNode {
    return node.dataType === 'integer' ? DataTypeNode.create('bigint') : node;
  }
}

const wideIntegers: KyselyPlugin = {
  transformQuery: (args: PluginTransformQueryArgs) => new WideIntegers().transformNode(args.node),
  transformResult: async (args: PluginTransformResultArgs) => args.result,
};

const INT8_OID = 20;

/**
 * pg returns bigint as a string (it may exceed 2^53); ours are millisecond
 * times and counts, well inside, and SQLite hands them back as numbers.
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : loadPg().types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * The domain's transactions were written for SQLite, where one writer runs at
 * a time: a guard reads, checks and writes (the last owner stays, a cap is not
 * exceeded) and nothing interleaves. Under PostgreSQL's READ COMMITTED two such
 * transactions can each pass the check on the other's stale state (write skew).
 * Every transaction therefore first takes one transaction-scoped advisory lock,
 * which gives back exactly SQLite's single-writer order across all pooled
 * connections and all instances. Plain reads and single statements do not
 * take it. (Finer row locks per guard are issue #19's later work.)
 *
 * Since only one transaction anywhere can hold that lock, a process gains
 * nothing by having several of its own wait for it, and each waiter would sit
 * on a pooled connection: a burst of writes behind a slow writer elsewhere
 * filled the pool, and every read and single statement then failed after the
 * pool's connection timeout. So a process's transactions take their turn in
 * memory first, and a connection is taken from the pool only for the turn (or,
 * outside a transaction, for the first statement).
 */
const WRITER_LOCK = 0x466c6f77; // "Flow"

/** One turn at a time, first come first served; the returned function ends the turn. */
function createTurns(): () => Promise<() => void> {
  let tail = Promise.resolve();
  return async () => {
    const previous = tail;
    let end!: () => void;
    tail = new Promise<void>((resolve) => (end = resolve));
    await previous;
    return end;
  };
}

/** A connection that takes one from the pool on its first statement, or at the start of a transaction after the process's writer turn. */
class LazyConnection implements DatabaseConnection {
  #real?: Promise<DatabaseConnection>;
  #endTurn?: () => void;
  constructor(
    private readonly inner: Driver,
    private readonly turns: () => Promise<() => void>,
  ) {}

  real(): Promise<DatabaseConnection> {
    return (this.#real ??= this.inner.acquireConnection());
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return (await this.real()).executeQuery<R>(query);
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    yield* (await this.real()).streamQuery<R>(query, chunkSize);
  }

  async begin(settings: TransactionSettings): Promise<void> {
    this.#endTurn = await this.turns();
    const real = await this.real();
    await this.inner.beginTransaction(real, settings);
    try {
      await real.executeQuery(CompiledQuery.raw(`select pg_advisory_xact_lock(${WRITER_LOCK})`));
    } catch (error) {
      // Kysely rolls back only what began: never hand the pool a connection inside a transaction.
      await this.inner.rollbackTransaction(real).catch(() => {});
      throw error;
    }
  }

  /** Back to the pool (Kysely calls this however the work ended), then the next transaction's turn. */
  async release(): Promise<void> {
    try {
      // A connection the pool never gave (database down) has nothing to give back.
      const real = await this.#real?.catch(() => undefined);
      if (real) await this.inner.releaseConnection(real);
    } finally {
      this.#endTurn?.();
    }
  }
}

class SingleWriterDriver implements Driver {
  readonly #inner: PostgresDriver;
  readonly #turns = createTurns();
  constructor(config: PostgresDialectConfig) {
    this.#inner = new PostgresDriver(config);
  }
  init = () => this.#inner.init();
  destroy = () => this.#inner.destroy();
  acquireConnection = async (): Promise<DatabaseConnection> => new LazyConnection(this.#inner, this.#turns);
  releaseConnection = (connection: DatabaseConnection) => (connection as LazyConnection).release();
  beginTransaction = (connection: DatabaseConnection, settings: TransactionSettings) => (connection as LazyConnection).begin(settings);
  commitTransaction = async (connection: DatabaseConnection) => this.#inner.commitTransaction(await (connection as LazyConnection).real());
  rollbackTransaction = async (connection: DatabaseConnection) => this.#inner.rollbackTransaction(await (connection as LazyConnection).real());
}

class SingleWriterDialect extends PostgresDialect {
  readonly #config: PostgresDialectConfig;
  constructor(config: PostgresDialectConfig) {
    super(config);
    this.#config = config;
  }
  override createDriver(): Driver {
    return new SingleWriterDriver(this.#config);
  }
}

export interface PostgresStore {
  store: Kysely<Database>;
  pool: pg.Pool;
}

/**
 * A PostgreSQL URL as a person may see it: scheme, user, host, port and
 * database, never the password (nor query options, which can carry one).
 * Undefined when it is no postgres:// or postgresql:// URL.
 */
export function describePostgresUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (!/^postgres(ql)?:$/.test(parsed.protocol)) return undefined;
  return `${parsed.protocol}//${parsed.username ? `${parsed.username}@` : ''}${parsed.host}${parsed.pathname}`;
}

/** A pooled connection to FLOWGATE_DATABASE_URL. The URL (it holds the password) is never logged. */
export function openPostgresStore(url: string): PostgresStore {
  const pool = new (loadPg().Pool)({ connectionString: url, max: 10, connectionTimeoutMillis: 5000, types });
  // An idle connection the server dropped (restart, failover) is discarded by the pool; without
  // this listener its 'error' event would crash the process. The next query opens a new one.
  pool.on('error', () => {});
  // The pool listens for errors only while a connection is idle in it. One held between statements (a
  // transaction's) reports a server restart as an 'error' event on itself: without a listener of its own that
  // crashed the instance ("terminating connection due to administrator command", seen in
  // test/scale-out-runs.test.ts). Its next statement fails instead, and the pool discards it on release.
  pool.on('connect', (client) => client.on('error', () => {}));
  const store = new Kysely<Database>({ dialect: new SingleWriterDialect({ pool }), plugins: [wideIntegers] });
  return { store, pool };
}

/** How often an instance reads the database server's clock again (src/store/clock.ts). */
const CLOCK_READ_MS = 60_000;

/**
 * Makes the database server's clock this process's shared clock (src/store/clock.ts): read now (halfway through the
 * query's round trip) and every CLOCK_READ_MS until the returned stop is called.
 */
export async function followDatabaseClock(pool: pg.Pool): Promise<() => void> {
  const read = async () => {
    const before = Date.now();
    const { rows } = await pool.query<{ ms: number }>('select extract(epoch from clock_timestamp())::float8 * 1000 as ms');
    const after = Date.now();
    setSharedClockOffset(Math.round(Number(rows[0]!.ms) - (before + after) / 2));
  };
  await read();
  const timer = setInterval(() => void read().catch(() => {}), CLOCK_READ_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Takes a session-level advisory lock on a connection of its own, held until
 * the returned release is called or the process dies (the server frees it with
 * the session). Undefined when another session holds it.
 */
export function tryHoldSessionLock(url: string, key: number): Promise<(() => Promise<void>) | undefined> {
  return sessionLock(url, key, false);
}

/** The same lock, waited for while another session holds it. */
export async function holdSessionLock(url: string, key: number): Promise<() => Promise<void>> {
  return (await sessionLock(url, key, true))!;
}

async function sessionLock(url: string, key: number, wait: boolean): Promise<(() => Promise<void>) | undefined> {
  const client = new (loadPg().Client)({ connectionString: url, connectionTimeoutMillis: 5000 });
  // A dropped connection (database restart) frees the lock; it must not crash the process.
  client.on('error', () => {});
  await client.connect();
  try {
    if (wait) {
      await client.query('select pg_advisory_lock($1)', [key]);
      return () => client.end().catch(() => {});
    }
    const { rows } = await client.query<{ held: boolean }>('select pg_try_advisory_lock($1) as held', [key]);
    if (rows[0]?.held) return () => client.end().catch(() => {});
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
  await client.end().catch(() => {});
  return undefined;
}
