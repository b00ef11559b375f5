import { randomUUID } from 'node:crypto';
import type { Services } from '../services.ts';
import {
  claimExecutionRow,
  claimPendingRows,
  completeExecution,
  heartbeat,
  isTerminal,
  pendingExecutionIds,
  reapExpired,
  type Completion,
} from './executions.ts';
import { nowIso } from '../ids.ts';
import type { WorkflowExecutionsTable } from '../store/schema.ts';
import type { Store } from '../store/db.ts';
import { isPostgres } from '../store/dialect.ts';
import { runExecution } from './executor.ts';
import { reverifyUnconfirmed, verifyEntries } from './verify-transactions.ts';
import type { RunEvents, RunOutcome } from './run-events.ts';
import { RunDataLimit } from './run-data-limit.ts';
import { pruneRunData, recordRunData, runDataChars } from './run-data-budget.ts';
import { RunLog } from './run-log.ts';
import { pruneOldRunData } from './run-retention.ts';
import type { NodeRunner } from './runners/types.ts';

const CHECKPOINT_RENEW_MS = 1_000;
/** How often old days of the organizations' run-data sums are dropped (run-data-budget.ts). */
const RUN_DATA_PRUNE_MS = 60 * 60 * 1000;

/**
 * Claims pending executions and runs them, a bounded number at a time. Each
 * claimed run holds a lease renewed by a heartbeat; runs whose lease lapses
 * (their process died) are reaped to system_error at start-up and
 * periodically, by any gateway process sharing the database, and the
 * transaction hashes they claimed are verified like a finished run's.
 *
 * Slots are shared fairly between organizations: one organization holds at
 * most `perOrgConcurrency` of them (the rest stay free for others), and
 * queued runs are taken round-robin across organizations, so one tenant's
 * backlog of slow runs never delays another tenant's runs.
 */

/**
 * The outcome a run's completion wrote, as `wait` answers it, when the write set every field
 * (else undefined: a waiter reads the row).
 */
function outcomeOf(c: Completion): RunOutcome | undefined {
  if (c.output === undefined || !c.transactionHashes) return undefined;
  return {
    status: c.status,
    output: c.output,
    error: c.error ?? null,
    transactionHashes: c.transactionHashes,
    gasUsedWei: c.gasUsedWei ?? null,
    completedAt: c.completedAt ?? null,
  };
}

export interface WorkerOptions {
  concurrency?: number;
  /** Slots one organization may hold at once (default: half of `concurrency`, rounded up). */
  perOrgConcurrency?: number;
  leaseMs?: number;
  heartbeatMs?: number;
  /** How often to reap lapsed leases and pick up pending runs left by others. */
  sweepMs?: number;
  /**
   * Instances share the database (PostgreSQL with a message bus): pending runs
   * another instance had no slot for are claimed here as soon as it says so,
   * `FOR UPDATE SKIP LOCKED`, and the sweep takes pending runs the same way.
   */
  shared?: boolean;
}

/** A reserved run slot (counted against its organization's share): write the execution already claimed by `claimedBy`, then `run` its row, or `release` the slot. */
export interface Admission {
  claimedBy: { owner: string; leaseMs: number };
  run(row: WorkflowExecutionsTable): void;
  release(): void;
}

export interface Worker {
  enqueue(executionId: string, organizationId: string): void;
  /** A free slot for a run of `organizationId` about to be written, or undefined when the worker or that organization's share is full (write it pending and enqueue it). */
  admit(organizationId: string): Admission | undefined;
  /** Shared database: claim pending runs into free slots now (another instance left some). */
  pull(): void;
  start(): Promise<void>;
  /** Stops taking work and waits (bounded) for running executions to finish. */
  stop(graceMs?: number): Promise<void>;
}

export function createWorker(services: Services, runners: Readonly<Record<string, NodeRunner>>, events: RunEvents, options: WorkerOptions = {}): Worker {
  const owner = `worker-${randomUUID()}`;
  const concurrency = options.concurrency ?? 4;
  const perOrg = Math.min(concurrency, options.perOrgConcurrency ?? Math.ceil(concurrency / 2));
  const leaseMs = options.leaseMs ?? 30_000;
  const heartbeatMs = options.heartbeatMs ?? Math.floor(leaseMs / 3);
  const sweepMs = options.sweepMs ?? Math.floor(leaseMs / 2);
  /** Queued run ids per organization; Map order is the round-robin order (a served organization moves to the back). */
  const queues = new Map<string, string[]>();
  const queued = new Set<string>();
  const active = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** Slots held per organization: running and reserved. */
  const held = new Map<string, number>();
  let sweeper: NodeJS.Timeout | undefined;
  let stopped = false;
  /** Slots promised by admit() whose rows are being written. */
  let reserved = 0;
  const hasSlot = () => !stopped && active.size + reserved < concurrency;
  const underShare = (organizationId: string) => (held.get(organizationId) ?? 0) < perOrg;
  const hold = (organizationId: string) => held.set(organizationId, (held.get(organizationId) ?? 0) + 1);
  const unhold = (organizationId: string) => {
    const left = (held.get(organizationId) ?? 1) - 1;
    if (left > 0) held.set(organizationId, left);
    else held.delete(organizationId);
  };

  const track = (executionId: string, organizationId: string, work: (abort: AbortController) => Promise<void>) => {
    const abort = new AbortController();
    const entry = { abort, done: Promise.resolve() };
    entry.done = work(abort).finally(() => {
      // A claim by id that lost to a SKIP LOCKED take of the same run (see pull) must not drop the winner's entry.
      if (active.get(executionId) === entry) active.delete(executionId);
      unhold(organizationId);
      pump();
      if (morePending) pull();
    });
    active.set(executionId, entry);
  };

  /** The last take found more pending runs than free slots: take again when a slot frees. */
  let morePending = false;
  let pulling = false;
  let pullAgain = false;

  /**
   * Shared database only: claims pending runs, whoever wrote them, into the free
   * slots (oldest first, skipping organizations at their share). SKIP LOCKED
   * lets instances woken by the same notification each take different runs
   * instead of all racing for the same ones.
   */
  const pull = () => {
    if (!options.shared || stopped) return;
    if (pulling) return void (pullAgain = true);
    pulling = true;
    takePending()
      .catch((error) => console.error('[flowgate] claiming pending runs failed:', (error as Error).message))
      .finally(() => {
        pulling = false;
        if (pullAgain) {
          pullAgain = false;
          pull();
        }
      });
  };

  async function takePending(): Promise<void> {
    for (;;) {
      const free = stopped ? 0 : concurrency - active.size - reserved;
      if (free <= 0) return void (morePending = true);
      // Organizations at their share are skipped; of the rest, no more runs than the fullest one may still take,
      // so whichever organizations the rows belong to, none goes past its share.
      const full = [...held].filter(([, n]) => n >= perOrg).map(([organizationId]) => organizationId);
      const fullest = Math.max(0, ...[...held.values()].filter((n) => n < perOrg));
      const take = Math.min(free, perOrg - fullest);
      reserved += take;
      let rows: WorkflowExecutionsTable[];
      try {
        rows = await claimPendingRows(services.store, owner, leaseMs, take, full);
      } finally {
        reserved -= take;
      }
      for (const row of rows) {
        hold(row.organization_id);
        track(row.id, row.organization_id, (abort) => run(row, abort));
      }
      // Organizations skipped at their share may have runs left: look again when a slot frees.
      if (rows.length < take) return void (morePending = full.length > 0);
    }
  }

  /** The next queued run, round-robin over organizations that are under their share. */
  const next = (): { id: string; organizationId: string } | undefined => {
    for (const [organizationId, queue] of queues) {
      if (!underShare(organizationId)) continue;
      const id = queue.shift()!;
      queues.delete(organizationId);
      if (queue.length > 0) queues.set(organizationId, queue);
      return { id, organizationId };
    }
    return undefined;
  };

  const pump = () => {
    while (hasSlot()) {
      const picked = next();
      if (!picked) return;
      const { id, organizationId } = picked;
      queued.delete(id);
      // Already taken here by pull (SKIP LOCKED) since it was queued.
      if (active.has(id)) continue;
      hold(organizationId);
      track(id, organizationId, async (abort) => {
        // The claim returns the row it claimed, so the run needs no second read.
        const row = await claimExecutionRow(services.store, id, owner, leaseMs);
        if (row) await run(row, abort);
      });
    }
  };

  async function run(row: WorkflowExecutionsTable, abort: AbortController): Promise<void> {
    const executionId = row.id;
    let currentNode: string | null = null;
    let lost = false;
    // Cancels sent to this process arrive as events; the flag itself is read with each lease renewal (below and in the heartbeat).
    let cancelRequested = row.cancel_requested === 1;
    const offCancel = events.onCancel(executionId, () => (cancelRequested = true));
    let lastRenewal = Date.now();
    /** Folds a heartbeat's answer into this run's state; true means stop. */
    const apply = (state: { owned: boolean; cancelRequested: boolean }) => {
      if (!state.owned) lost = true;
      if (state.cancelRequested) cancelRequested = true;
      return lost || cancelRequested;
    };
    const beat = setInterval(() => {
      heartbeat(services.store, executionId, owner, leaseMs, currentNode)
        .then((state) => {
          if (apply(state)) abort.abort();
        })
        .catch(() => {});
    }, heartbeatMs);
    const log = new RunLog(services.store, new RunDataLimit(services.config.engine.runDataLimitBytes));
    try {
      const completion = await runExecution({ services, runners }, row, {
        executionId,
        signal: abort.signal,
        log,
        checkpoint: async (nodeId) => {
          currentNode = nodeId;
          // Progress watchers read the log from the database: let them see every finished step.
          if (events.watched(executionId)) await log.flush();
          events.progressed(executionId);
          // Renewing the lease is a write, at most every CHECKPOINT_RENEW_MS; it reads the cancel flag too, so a cancel sent
          // to another process sharing the database is seen at the first boundary after the next renewal.
          if (Date.now() - lastRenewal >= CHECKPOINT_RENEW_MS) {
            lastRenewal = Date.now();
            return apply(await heartbeat(services.store, executionId, owner, leaseMs, nodeId));
          }
          return cancelRequested || lost;
        },
      });
      // Aborted by shutdown rather than by a user: leave the row for the reaper (system_error), never `cancelled`.
      const interruptedByShutdown = stopped && !cancelRequested && completion.status === 'cancelled';
      if (lost || interruptedByShutdown) {
        await log.flush();
        return;
      }
      // The held log rows and the final status in one commit: a finished run always has its whole log.
      const written: Completion = isTerminal(completion.status) ? { ...completion, completedAt: nowIso() } : completion;
      // The run's data joins its organization's day (run-data-budget.ts): on SQLite in the same group commit; on
      // PostgreSQL after it, one upsert of its own, so the store-wide writer lock is not held for another round trip.
      const recordData = (via?: Store) =>
        recordRunData(services.store, row.organization_id, runDataChars(row, log.limit.usedChars), services.config.engine.runDataPerOrgPerDayBytes, via);
      const inCommit = !isPostgres(services.store);
      const recorded = await log.flush(async (trx) => {
        const completed = await completeExecution(services.store, executionId, owner, written, trx);
        if (completed && inCommit) await recordData(trx);
        return completed;
      });
      // The run has ended either way: a sum that could not be added costs the budget's accuracy, not the run.
      if (recorded && !inCommit) await recordData().catch((error) => console.error(`[flowgate] run data of ${executionId} not counted:`, error));
      events.finished(executionId, completion.status, recorded ? outcomeOf(written) : undefined, row.organization_id);
    } catch (error) {
      console.error(`[flowgate] execution ${executionId} failed inside the engine:`, error);
      await log.flush().catch(() => {});
      const ended = await completeExecution(services.store, executionId, owner, {
        status: 'system_error',
        error: 'The engine failed while running this execution; it has been logged.',
        errorContext: { reason: 'engine_error', message: error instanceof Error ? error.message : String(error) },
      }).catch(() => false);
      // It kept its graph copy, input and what its steps logged like any finished run: they count against the day's budget too.
      if (ended)
        await recordRunData(services.store, row.organization_id, runDataChars(row, log.limit.usedChars), services.config.engine.runDataPerOrgPerDayBytes).catch(
          () => {},
        );
      events.finished(executionId, 'system_error', undefined, row.organization_id);
    } finally {
      clearInterval(beat);
      offCancel();
    }
  }

  let nextRunDataPrune = 0;
  /** Where the next sweep's look for pending runs starts (organization ids), so none is always last. */
  let pendingCursor = '';
  let pruning: Promise<unknown> | undefined;
  async function sweep() {
    // A reaped run's claimed hashes are verified like a finished run's (the status stays system_error).
    for (const id of await reapExpired(services.store, services.config.engine.runDataPerOrgPerDayBytes, (entries) => verifyEntries(services, entries)))
      events.finished(id, 'system_error');
    if (options.shared) pull();
    else {
      const { runs, resumeAfter } = await pendingExecutionIds(services.store, 100, pendingCursor);
      pendingCursor = resumeAfter;
      for (const { id, organizationId } of runs) worker.enqueue(id, organizationId);
    }
    for (const { id, status } of await reverifyUnconfirmed(services)) events.finished(id, status);
    // About once an hour: the daily run-data sums are read for today only, so older days are dropped; and runs past
    // the retention lose their data (run-retention.ts).
    if (Date.now() >= nextRunDataPrune) {
      nextRunDataPrune = Date.now() + RUN_DATA_PRUNE_MS;
      await pruneRunData(services.store);
      const retentionDays = services.config.engine.runDataRetentionDays;
      // In the background: a first prune of a long history must not hold up start or the sweep's other work.
      if (retentionDays !== undefined && !pruning && !stopped) {
        pruning = pruneOldRunData(services.store, retentionDays, () => !stopped)
          .catch((error) => console.error('[flowgate] pruning old run data failed:', error))
          .finally(() => (pruning = undefined));
      }
    }
  }

  const worker: Worker = {
    admit(organizationId) {
      if (!hasSlot() || !underShare(organizationId)) return undefined;
      reserved++;
      hold(organizationId);
      let settled = false;
      const settle = () => {
        if (settled) return false;
        settled = true;
        reserved--;
        return true;
      };
      return {
        claimedBy: { owner, leaseMs },
        run(row) {
          if (!settle()) return;
          // Stopped meanwhile: the row is ours and `running`; its lease lapses and the reaper ends it, like any run cut by shutdown.
          if (stopped) unhold(organizationId);
          else track(row.id, organizationId, (abort) => run(row, abort));
        },
        release() {
          if (!settle()) return;
          unhold(organizationId);
          pump();
        },
      };
    },
    enqueue(executionId, organizationId) {
      if (stopped || queued.has(executionId) || active.has(executionId)) return;
      queued.add(executionId);
      const queue = queues.get(organizationId);
      if (queue) queue.push(executionId);
      else queues.set(organizationId, [executionId]);
      pump();
      // No slot here for it: an idle instance on the same database may take it now.
      if (queued.has(executionId)) events.pendingWork();
    },
    pull,
    async start() {
      await sweep();
      sweeper = setInterval(() => void sweep().catch((e) => console.error('[flowgate] sweep failed:', e)), sweepMs);
      sweeper.unref();
    },
    async stop(graceMs = 5_000) {
      stopped = true;
      if (sweeper) clearInterval(sweeper);
      const running = [...active.values()];
      const timeout = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
      await Promise.race([Promise.all(running.map((r) => r.done)), timeout]);
      // Runs still going keep their rows as `running`; their leases lapse and the next start reaps them.
      for (const r of active.values()) r.abort.abort();
      // A prune ends at its next batch boundary once stopped: each batch is one short transaction.
      await pruning;
    },
  };
  return worker;
}
