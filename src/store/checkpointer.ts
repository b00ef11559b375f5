import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteHandle } from './db.ts';

/**
 * WAL checkpoints off the event loop. SQLite checkpoints inside the commit
 * that takes the WAL past 1,000 pages: that commit copies the pages into the
 * database file and syncs it, a stall of up to ~20 ms on this machine during
 * which the gateway serves nothing (and commits cost 2.5x as much on average).
 * So once the gateway writes in earnest, its connection turns its own
 * checkpoints off, and a worker thread with a second connection to the same
 * file runs a PASSIVE checkpoint every CHECK_MS instead: it never waits for,
 * or blocks, the writer or its readers, and a commit is as durable as before
 * (synchronous=NORMAL: the WAL is synced at each checkpoint).
 * - An idle gateway starts no thread (about 11 MB): the worker starts once the
 *   connection has changed START_CHANGES rows.
 * - Until the worker is ready, and if it fails or exits, the connection keeps
 *   (or gets back) SQLite's own checkpoints, so the WAL never grows without bound.
 */

const CHECK_MS = 200;
/** Rows changed (inserted, updated, deleted) before the worker starts, and how often that is looked at. */
const START_CHANGES = 1_000;
const WATCH_MS = 1_000;
/** SQLite's own default for wal_autocheckpoint (pages). */
const SQLITE_AUTOCHECKPOINT = 1000;
/** How long close() waits for the worker to close its connection before stopping it. */
const CLOSE_MS = 2_000;

// Plain CommonJS, evaluated in the worker: it needs only the driver, so it loads no TypeScript and no hooks.
// A checkpoint reads WAL frames and writes them to the file: it needs next to no page cache.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('cache_size = 16');
const timer = setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
`;

export interface Checkpointer {
  /** Stops the worker after it closes its connection; the gateway's connection is then the last one, and its close checkpoints. */
  close(): Promise<void>;
}

export interface CheckpointerOptions {
  intervalMs?: number;
  /** Rows the connection changes before the worker starts (0: at once). */
  startAfterChanges?: number;
  /** The SQLite driver the worker loads (tests pass a failing one to see the fallback). */
  driver?: string;
}

export function checkpointInBackground(sqlite: SqliteHandle, options: CheckpointerOptions = {}): Checkpointer {
  if (sqlite.memory) return { close: async () => {} };
  const driver = options.driver ?? createRequire(import.meta.url).resolve('better-sqlite3');
  let closing = false;
  let stopWorker: (() => Promise<void>) | undefined;
  const ownCheckpoints = (pages: number) => {
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${pages}`);
  };

  const start = () => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: sqlite.name, driver, intervalMs: options.intervalMs ?? CHECK_MS },
      // Not the parent's flags (--import tsx, --cpu-prof, ...): the worker needs none of them.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 },
    });
    // A checkpointer never keeps the process alive on its own.
    worker.unref();
    worker.on('message', (message) => message === 'ready' && !closing && ownCheckpoints(0));
    // Failed to start, a checkpoint failed, or the thread is gone: SQLite checkpoints in the commits again.
    worker.on('error', () => ownCheckpoints(SQLITE_AUTOCHECKPOINT));
    const exited = new Promise<void>((resolve) =>
      worker.once('exit', () => {
        if (!closing) ownCheckpoints(SQLITE_AUTOCHECKPOINT);
        resolve();
      }),
    );
    stopWorker = async () => {
      worker.postMessage('close');
      const timer = setTimeout(() => void worker.terminate(), CLOSE_MS);
      await exited;
      clearTimeout(timer);
    };
  };

  const startAfter = options.startAfterChanges ?? START_CHANGES;
  let watch: NodeJS.Timeout | undefined;
  if (startAfter <= 0) start();
  else {
    const changes = sqlite.prepare('select total_changes()').pluck();
    const startAt = (changes.get() as number) + startAfter;
    watch = setInterval(() => {
      if (!sqlite.open) return clearInterval(watch);
      if ((changes.get() as number) < startAt) return;
      clearInterval(watch);
      start();
    }, WATCH_MS).unref();
  }

  return {
    async close() {
      closing = true;
      clearInterval(watch);
      await stopWorker?.();
    },
  };
}
