import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { rowChars } from './row-chars.ts';

/**
 * Runs one SQLite statement in a short-lived child process. better-sqlite3 is
 * synchronous and exposes neither a progress handler nor sqlite3_interrupt:
 * on the gateway's thread a runaway query (a recursive CTE without end) would
 * stop every tenant's requests, and a worker thread cannot be terminated
 * while SQLite's native loop runs. A process can: it is killed at the time
 * limit or when the run is cancelled.
 */

export interface SqliteJob {
  /** Real path, already checked by resolveSqlitePath. */
  file: string;
  allowWrites: boolean;
  /** The statement with `?` placeholders, already checked by checkSqliteStatement. */
  sql: string;
  params: unknown[];
  maxRows: number;
  /** The refusal past maxRows. */
  tooManyRows: string;
  /** JSON characters the rows may come to; past it the child answers `tooLarge` instead of sending them. */
  maxChars: number;
  tooLarge: string;
}

export type SqliteOutcome =
  | { ok: true; rows: unknown[]; rowCount: number }
  /** `guard`: a refusal whose message is shown as it is; `sqlite`: SQLite's error, with its code. */
  | { ok: false; kind: 'guard' | 'sqlite' | 'timeout' | 'cancelled' | 'failed'; message: string; code?: string };

/** The child's program: plain JavaScript, so it needs no TypeScript loader. */
const CHILD_SOURCE = `
const Database = require(process.argv[1]);
const rowChars = ${rowChars.toString()};
process.once('message', (job) => {
  const guard = (message) => Object.assign(new Error(message), { guard: true });
  let db;
  let outcome;
  try {
    db = new Database(job.file, { readonly: !job.allowWrites, fileMustExist: true, timeout: 5000 });
    // load_extension is off in better-sqlite3 (kept off should that change); fts3_tokenizer(x) returns a native pointer.
    for (const name of ['load_extension', 'fts3_tokenizer']) {
      const refuse = () => { throw guard(name + '() does not run on SQLite integrations.'); };
      db.function(name, (a) => refuse());
      db.function(name, (a, b) => refuse());
    }
    const statement = db.prepare(job.sql);
    // Second layer for read-only integrations: SQLite itself must call the statement a row-returning read.
    if (!job.allowWrites && !(statement.reader && statement.readonly)) {
      throw guard('This SQLite integration is read-only: only statements that read rows run (set allowWrites: true in its config for writes).');
    }
    if (statement.reader) {
      // Counted as the run data limit counts a step's output (JSON characters), row by row: an oversized result
      // never crosses to the gateway's process, where it would sit in memory shared by every tenant.
      const rows = [];
      let chars = 0;
      for (const row of statement.iterate(...job.params)) {
        if (rows.length >= job.maxRows) throw guard(job.tooManyRows);
        chars += rowChars(row) + 1;
        if (chars > job.maxChars) throw guard(job.tooLarge);
        rows.push(row);
      }
      outcome = { ok: true, rows, rowCount: rows.length };
    } else {
      outcome = { ok: true, rows: [], rowCount: statement.run(...job.params).changes };
    }
  } catch (error) {
    outcome = {
      ok: false,
      kind: error && error.guard ? 'guard' : 'sqlite',
      message: error instanceof Error ? error.message : String(error),
      code: error && typeof error.code === 'string' ? error.code : undefined,
    };
  } finally {
    if (db) db.close();
  }
  process.send(outcome, () => process.exit(0));
});
`;

const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');
const CHILD_HEAP_MB = 256;

/** Blobs cross as Uint8Array; give them back as Buffers, as better-sqlite3 returns them. */
const revive = (rows: unknown[]) =>
  rows.map((row) =>
    row && typeof row === 'object'
      ? Object.fromEntries(
          Object.entries(row).map(([key, value]) => [key, value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value) : value]),
        )
      : row,
  );

export function runSqliteJob(job: SqliteJob, timeoutMs: number, signal: AbortSignal): Promise<SqliteOutcome> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve({ ok: false, kind: 'cancelled', message: 'The query was cancelled.' });
    // No inherited environment: NODE_OPTIONS (a loader, --inspect) must not reach the child.
    const child = spawn(process.execPath, [`--max-old-space-size=${CHILD_HEAP_MB}`, '-e', CHILD_SOURCE, DRIVER], {
      env: {},
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      serialization: 'advanced',
    });
    let settled = false;
    const settle = (outcome: SqliteOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (child.exitCode === null) child.kill('SIGKILL');
      resolve(outcome.ok ? { ...outcome, rows: revive(outcome.rows) } : outcome);
    };
    const timer = setTimeout(
      () => settle({ ok: false, kind: 'timeout', message: `The query ran longer than ${timeoutMs / 1000} s and was stopped.` }),
      timeoutMs,
    );
    const onAbort = () => settle({ ok: false, kind: 'cancelled', message: 'The query was cancelled.' });
    signal.addEventListener('abort', onAbort, { once: true });
    child.once('message', (outcome: SqliteOutcome) => settle(outcome));
    child.once('error', (error) => settle({ ok: false, kind: 'failed', message: `The query could not run: ${error.message}` }));
    child.once('close', (code, sig) =>
      settle({ ok: false, kind: 'failed', message: `The query could not finish (the query process ended: ${sig ?? `exit ${code}`}).` }),
    );
    child.send(job);
  });
}
