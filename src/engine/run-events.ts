import { EventEmitter } from 'node:events';
import { isTerminal, type TransactionHashEntry } from './executions.ts';

/** How many recent completions are remembered (see RunEvents.finished). */
const REMEMBERED_COMPLETIONS = 10_000;

/** What a finished run wrote as its outcome, carried by its completion event so a waiter need not read it back. */
export interface RunOutcome {
  status: string;
  output: Record<string, unknown> | null;
  error: string | null;
  transactionHashes: TransactionHashEntry[];
  gasUsedWei: string | null;
  completedAt: string | null;
}

/** A completion seen by a subscription: the status, and the outcome when the process that ended the run knew it. */
export interface RunEnded {
  status: string;
  outcome?: RunOutcome;
}

/** A subscription taken before reading the row: a run that ends between the read and the wait still wakes it. */
export interface RunSubscription {
  /** The next completion event, or undefined when the time ran out (or `close` was called first). */
  ended: Promise<RunEnded | undefined>;
  close(): void;
}

/**
 * In-process notifications of run progress and completion, so `wait` wakes
 * the moment a run ends instead of polling the database in a loop.
 */
export class RunEvents {
  private readonly emitter = new EventEmitter();
  /**
   * Runs that ended lately, by id. A waiter reads the row and then waits: a
   * run that ends between the two would otherwise leave it waiting for its
   * whole timeout. Oldest forgotten first.
   */
  private readonly ended = new Map<string, string>();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  /** Emitted once the run's status is committed; `outcome` is what was written, when the caller has it. */
  finished(executionId: string, status: string, outcome?: RunOutcome): void {
    // `unconfirmed` is not an end: its waiters keep waiting for the verification sweep's verdict.
    if (isTerminal(status)) this.remember(executionId, status);
    this.emitter.emit(`finished:${executionId}`, { status, outcome } satisfies RunEnded);
  }

  private remember(executionId: string, status: string): void {
    if (this.ended.size >= REMEMBERED_COMPLETIONS) this.ended.delete(this.ended.keys().next().value!);
    this.ended.set(executionId, status);
  }

  /** Whether anyone follows this run's steps (progress notifications). */
  watched(executionId: string): boolean {
    return this.emitter.listenerCount(`progress:${executionId}`) > 0;
  }

  /** Whether anyone is subscribed to this run's completion (a `wait` in progress). */
  awaited(executionId: string): boolean {
    return this.emitter.listenerCount(`finished:${executionId}`) > 0;
  }

  /** A cancel was recorded for this run (see `onCancel`). */
  cancelRequested(executionId: string): void {
    this.emitter.emit(`cancel:${executionId}`);
  }

  /** The worker running this run here hears its cancel without reading the flag at every node boundary; returns the unsubscribe. */
  onCancel(executionId: string, listener: () => void): () => void {
    this.emitter.on(`cancel:${executionId}`, listener);
    return () => this.emitter.off(`cancel:${executionId}`, listener);
  }

  progressed(executionId: string): void {
    this.emitter.emit(`progress:${executionId}`);
  }

  /**
   * Subscribes now to the run's next completion event (or `ms` passing); `onProgress` fires after
   * each step meanwhile. Subscribe, then read the row: nothing that ends after the read is missed.
   */
  subscribe(executionId: string, ms: number, onProgress?: () => void): RunSubscription {
    let done!: (ended?: RunEnded) => void;
    const ended = new Promise<RunEnded | undefined>((resolve) => {
      done = (value?: RunEnded) => {
        clearTimeout(timer);
        this.emitter.off(`finished:${executionId}`, done);
        if (onProgress) this.emitter.off(`progress:${executionId}`, onProgress);
        resolve(value);
      };
    });
    const timer = setTimeout(() => done(undefined), ms);
    this.emitter.on(`finished:${executionId}`, done);
    if (onProgress) this.emitter.on(`progress:${executionId}`, onProgress);
    return { ended, close: () => done(undefined) };
  }

  /** Resolves on completion (at once when the run already ended in this process), or after `ms` with undefined; `onProgress` fires after each step. */
  async waitFor(executionId: string, ms: number, onProgress?: () => void): Promise<string | undefined> {
    const ended = this.ended.get(executionId);
    if (ended !== undefined) return ended;
    return (await this.subscribe(executionId, ms, onProgress).ended)?.status;
  }
}
