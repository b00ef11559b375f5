import type { Store } from '../store/db.ts';
import type { WorkflowExecutionLogsTable } from '../store/schema.ts';
import { newSortableId, nowIso } from '../ids.ts';
import { prepared } from '../store/prepared.ts';
import { groupCommit } from '../store/group-commit.ts';
import { OMITTED_INPUT_TEXT, RunDataLimit, RunDataLimitError } from './run-data-limit.ts';

/**
 * One run's log writes. Each commit costs far more than the row it writes
 * (WAL frames and locks), so rows of steps whose effects stay inside the
 * engine — the trigger, Condition, math/aggregate, Collect, skipped nodes and
 * For Each iterations of those — are held briefly and committed together.
 * The rules that keep the log durable where it matters:
 * - a step that can act outside the engine (HTTP, database, web3, ...) gets
 *   its running row, with every held row before it, committed before it
 *   starts, and its finished row committed as soon as it ends;
 * - held rows are committed at the next turn of the event loop (a run that
 *   awaits I/O commits them at once) and whenever MAX_HELD wait;
 * - the worker commits what is held in the same transaction as the run's
 *   final status, so a finished run always has all of its rows;
 * - every commit is shared with other runs' writes of the same turn of the
 *   event loop (src/store/group-commit.ts), and settles once committed.
 * Commits happen in the order rows were logged, so the log on disk is always
 * a gapless prefix of the run's log, in order. A process killed outright can
 * lose only held rows of such contained steps (at most MAX_HELD, computed in
 * the last two turns of the event loop: one to hold them, one for the group
 * commit that carries them; nothing waits on a write before it is
 * committed, so no later step ran on the strength of one); the reaper then
 * ends the run as system_error, and no step that acted outside the engine is
 * ever unlogged.
 * Every row's input and output is made into text through the run's data
 * limit (run-data-limit.ts): a finished row that would cross it is written
 * as its refusal instead, and the refusal is returned to the caller; a
 * running row's input that would cross it throws RunDataLimitError before
 * anything is written.
 */

export const MAX_HELD = 64;

export interface LogEntry {
  executionId: string;
  nodeId: string;
  nodeName: string;
  nodeType: string;
  input: unknown;
  /** The input already made into text (and counted) when the step started. */
  inputText?: string;
  iterationIndex?: number | null;
  forEachNodeId?: string | null;
}

let lastSeq = 0;

/**
 * Orders log rows: the time in microsecond units, strictly increasing within
 * this process (several rows can share a millisecond), so rows list in the
 * order they were logged.
 */
function nextSeq(): number {
  lastSeq = Math.max(Date.now() * 1000, lastSeq + 1);
  return lastSeq;
}

const LOG_COLUMNS: Record<keyof WorkflowExecutionLogsTable, true> = {
  id: true,
  execution_id: true,
  node_id: true,
  node_name: true,
  node_type: true,
  status: true,
  input: true,
  output: true,
  error: true,
  started_at: true,
  completed_at: true,
  duration_ms: true,
  seq: true,
  iteration_index: true,
  for_each_node_id: true,
};
const insertLog = prepared<WorkflowExecutionLogsTable>((db: Store, row) => db.insertInto('workflow_execution_logs').values(row), LOG_COLUMNS);

const LOG_COLUMN_NAMES = Object.keys(LOG_COLUMNS) as (keyof WorkflowExecutionLogsTable)[];

/**
 * Multi-row inserts, one prepared statement per row count (at most MAX_HELD + 1 of them), each with its argument
 * names (`<row>:<column>`) made once: a run's rows are written often enough that building them per write showed.
 */
const insertLogsBySize = new Map<number, { query: ReturnType<typeof prepared<Record<string, unknown>>>; keys: string[][] }>();
function insertLogs(count: number) {
  const keys = Array.from({ length: count }, (_, i) => LOG_COLUMN_NAMES.map((name) => `${i}:${name}`));
  const columns = Object.fromEntries(keys.flat().map((key) => [key, true])) as Record<string, true>;
  const query = prepared<Record<string, unknown>>(
    (db: Store, args) =>
      db
        .insertInto('workflow_execution_logs')
        .values(keys.map((rowKeys) => Object.fromEntries(LOG_COLUMN_NAMES.map((name, j) => [name, args[rowKeys[j]!]])) as never)),
    columns,
  );
  return { query, keys };
}
function insertMany(store: Store, rows: WorkflowExecutionLogsTable[], via: Store) {
  let statement = insertLogsBySize.get(rows.length);
  if (!statement) insertLogsBySize.set(rows.length, (statement = insertLogs(rows.length)));
  const args: Record<string, unknown> = {};
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const rowKeys = statement.keys[i]!;
    for (let j = 0; j < LOG_COLUMN_NAMES.length; j++) args[rowKeys[j]!] = row[LOG_COLUMN_NAMES[j]!];
  }
  return statement.query(store, args, via);
}

interface Finish {
  id: string;
  status: string;
  output: string;
  error: string | null;
  completedAt: string;
  durationMs: number;
}
const updateLog = prepared<Finish>((db: Store, a) =>
  db
    .updateTable('workflow_execution_logs')
    .set({ status: a.status, output: a.output, error: a.error, completed_at: a.completedAt, duration_ms: a.durationMs })
    .where('id', '=', a.id),
);

type Write = { insert: WorkflowExecutionLogsTable } | { update: Finish };

function logRow(
  entry: LogEntry,
  input: string,
  fields: Pick<WorkflowExecutionLogsTable, 'status' | 'output' | 'error' | 'started_at' | 'completed_at' | 'duration_ms'>,
): WorkflowExecutionLogsTable {
  return {
    id: newSortableId(),
    execution_id: entry.executionId,
    node_id: entry.nodeId,
    node_name: entry.nodeName,
    node_type: entry.nodeType,
    input,
    ...fields,
    seq: nextSeq(),
    iteration_index: entry.iterationIndex ?? null,
    for_each_node_id: entry.forEachNodeId ?? null,
  };
}

export class RunLog {
  private held: Write[] = [];
  private flushScheduled = false;
  /** Commits in logging order: each one starts after the previous one ended. */
  private commits: Promise<void> = Promise.resolve();
  /** A failed background commit, reported by the next write (the run then ends as an engine failure). */
  private failure: unknown;

  constructor(
    private readonly store: Store,
    /** What this run's rows may hold in all (see run-data-limit.ts). */
    readonly limit: RunDataLimit = new RunDataLimit(),
  ) {}

  /** A step that shows as running while it runs; returns its row id. Committed (with what is held) before this returns. */
  async started(entry: LogEntry): Promise<string> {
    const row = logRow(entry, this.inputText(entry, false), {
      status: 'running',
      output: null,
      error: null,
      started_at: nowIso(),
      completed_at: null,
      duration_ms: null,
    });
    await this.commit([{ insert: row }]);
    return row.id;
  }

  /**
   * Ends a step logged with `started`; `contained` steps' rows may be held (see above). An output over the run's
   * data limit is not written: the row ends `error` with the refusal instead, which is returned (the step fails with it).
   */
  async finished(id: string, status: string, output: unknown, error: string | null, startedAtMs: number, contained: boolean): Promise<string | undefined> {
    const write = (status: string, output: unknown, error: string | null) => {
      const text = this.limit.serialize(output, 'output', status !== 'success');
      const now = Date.now();
      return this.write({ update: { id, status, output: text, error, completedAt: new Date(now).toISOString(), durationMs: now - startedAtMs } }, contained);
    };
    return this.orRefusal(
      () => write(status, output, error),
      (refusal) => write('error', { success: false, error: refusal }, refusal),
    );
  }

  /**
   * A step logged once, finished (iterations, the trigger, skipped nodes, Collect). A row over the run's data limit
   * is written as its refusal instead (its input omitted when that alone does not fit), which is returned.
   */
  async finishedStep(
    entry: LogEntry,
    status: string,
    output: unknown,
    error: string | null,
    startedAtMs: number,
    contained: boolean,
  ): Promise<string | undefined> {
    const write = (entry: LogEntry, status: string, output: unknown, error: string | null) => {
      const ending = status !== 'success';
      const input = this.inputText(entry, ending);
      const text = this.limit.serialize(output, 'output', ending);
      const now = Date.now();
      const row = logRow(entry, input, {
        status,
        output: text,
        error,
        started_at: new Date(startedAtMs).toISOString(),
        completed_at: new Date(now).toISOString(),
        duration_ms: now - startedAtMs,
      });
      return this.write({ insert: row }, contained);
    };
    return this.orRefusal(
      () => write(entry, status, output, error),
      (refusal) => {
        let inputText: string;
        try {
          inputText = this.inputText(entry, true);
        } catch {
          inputText = OMITTED_INPUT_TEXT;
        }
        return write({ ...entry, inputText }, 'error', { success: false, error: refusal }, refusal);
      },
    );
  }

  /** `write`, or when the data limit refuses its row, `refused` with the reason, which is returned. */
  private async orRefusal(write: () => Promise<void>, refused: (refusal: string) => Promise<void>): Promise<string | undefined> {
    try {
      await write();
      return undefined;
    } catch (error) {
      if (!(error instanceof RunDataLimitError)) throw error;
      await refused(error.message);
      return error.message;
    }
  }

  private inputText(entry: LogEntry, ending: boolean): string {
    return entry.inputText ?? this.limit.serialize(entry.input, 'input', ending);
  }

  /** Commits what is held; `also` runs in the same transaction, after the rows (the run's final status). */
  async flush<T>(also?: (trx: Store) => Promise<T>): Promise<T | undefined> {
    let result: T | undefined;
    await this.commit([], also && (async (trx) => void (result = await also(trx))));
    return result;
  }

  private async write(write: Write, contained: boolean): Promise<void> {
    if (!contained) return this.commit([write]);
    this.throwFailure();
    this.held.push(write);
    if (this.held.length >= MAX_HELD) return this.commit([]);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.commit([]).catch((error) => (this.failure ??= error));
      });
    }
  }

  private commit(writes: Write[], also?: (trx: Store) => Promise<void>): Promise<void> {
    const batch = [...this.held, ...writes];
    this.held = [];
    const run = this.commits.then(async () => {
      this.throwFailure();
      if (batch.length === 0 && !also) return;
      // Committed with the other runs' writes of this turn of the event loop (group commit).
      await groupCommit(this.store, async (trx) => {
        // Consecutive inserts go in one statement.
        for (let i = 0; i < batch.length;) {
          let end = i;
          while (end < batch.length && 'insert' in batch[end]!) end++;
          if (end - i > 1) {
            await insertMany(
              this.store,
              batch.slice(i, end).map((w) => (w as { insert: WorkflowExecutionLogsTable }).insert),
              trx,
            );
            i = end;
          } else {
            await this.apply(trx, batch[i]!);
            i++;
          }
        }
        if (also) await also(trx);
      });
    });
    // A failure stays with the caller of this commit; later commits report it too (the log would have a gap).
    this.commits = run.catch((error) => void (this.failure ??= error));
    return run;
  }

  private async apply(via: Store, write: Write): Promise<void> {
    if ('insert' in write) await insertLog(this.store, write.insert, via);
    else await updateLog(this.store, write.update, via);
  }

  private throwFailure(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}
