import { EventEmitter } from 'node:events';
import { isTerminal, type TransactionHashEntry } from './executions.ts';
import type { MessageBus } from '../store/pg-bus.ts';

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

/** What instances sharing a database tell each other (see `RunEvents.attach`). */
type BusMessage =
  /** A run ended; `o` its organization (absent from older instances: then every listener is woken). */
  | { k: 'f'; id: string; s: string; o?: string }
  | { k: 'c'; id: string }
  | { k: 'p'; id: string }
  /** Someone here follows this run's steps for `ms`: its worker should flush the log and report each step. */
  | { k: 'w'; id: string; ms: number }
  /** Runs were left pending: an instance with a free slot should claim them. */
  | { k: 'q' };

/**
 * In-process notifications of run progress and completion, so `wait` wakes
 * the moment a run ends instead of polling the database in a loop. With a
 * message bus attached (PostgreSQL: LISTEN/NOTIFY), completions, cancels,
 * pending work, and progress of runs followed elsewhere, reach every instance
 * on the database.
 */
export class RunEvents {
  private readonly emitter = new EventEmitter();
  private bus: MessageBus | undefined;
  /** Runs followed on another instance, until when (ms epoch): their progress is published. */
  private readonly watchedElsewhere = new Map<string, number>();
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
  finished(executionId: string, status: string, outcome?: RunOutcome, organizationId?: string): void {
    this.bus?.publish({ k: 'f', id: executionId, s: status, ...(organizationId ? { o: organizationId } : {}) } satisfies BusMessage);
    this.watchedElsewhere.delete(executionId);
    this.emitFinished(executionId, status, outcome, organizationId);
  }

  private emitFinished(executionId: string, status: string, outcome?: RunOutcome, organizationId?: string): void {
    // `unconfirmed` is not an end: its waiters keep waiting for the verification sweep's verdict.
    if (isTerminal(status)) this.remember(executionId, status);
    this.emitter.emit(`finished:${executionId}`, { status, outcome } satisfies RunEnded);
    this.emitter.emit('finished', executionId, organizationId);
  }

  /**
   * Connects this process to the others on its database. Messages from them are
   * replayed here; `onPending` hears that another instance left runs pending,
   * and also that the bus reconnected (anything may have been missed meanwhile).
   */
  async attach(bus: MessageBus, onPending: () => void): Promise<void> {
    this.bus = bus;
    this.emitter.on('pending', onPending);
    await bus.start({
      onMessages: (messages) => {
        for (const m of messages as BusMessage[]) this.receive(m);
      },
      onReconnect: () => {
        // Completions sent while disconnected are lost: wake every waiter so it re-reads its row.
        for (const name of this.emitter.eventNames()) {
          if (typeof name === 'string' && name.startsWith('finished:')) this.emitter.emit(name, undefined);
        }
        this.emitter.emit('pending');
      },
    });
  }

  async detach(): Promise<void> {
    const bus = this.bus;
    this.bus = undefined;
    this.emitter.removeAllListeners('pending');
    await bus?.close();
  }

  private receive(m: BusMessage): void {
    if (m.k === 'f' && typeof m.id === 'string') this.emitFinished(m.id, String(m.s), undefined, typeof m.o === 'string' ? m.o : undefined);
    else if (m.k === 'c' && typeof m.id === 'string') this.emitter.emit(`cancel:${m.id}`);
    else if (m.k === 'p' && typeof m.id === 'string') this.emitter.emit(`progress:${m.id}`);
    else if (m.k === 'w' && typeof m.id === 'string') this.watchedElsewhere.set(m.id, Date.now() + Math.min(Number(m.ms) || 0, 120_000));
    else if (m.k === 'q') this.emitter.emit('pending');
  }

  /** This process left runs pending that it has no slot for: tell the others (no-op without a bus). */
  pendingWork(): void {
    this.bus?.publish({ k: 'q' } satisfies BusMessage);
  }

  /**
   * Hears every completion (any run, any instance), with the run's organization when the one ending it knew it
   * (undefined: it may be anyone's); returns the unsubscribe.
   */
  onAnyFinished(listener: (executionId: string, organizationId: string | undefined) => void): () => void {
    this.emitter.on('finished', listener);
    return () => this.emitter.off('finished', listener);
  }

  private remember(executionId: string, status: string): void {
    if (this.ended.size >= REMEMBERED_COMPLETIONS) this.ended.delete(this.ended.keys().next().value!);
    this.ended.set(executionId, status);
  }

  /** Whether anyone follows this run's steps (progress notifications). */
  watched(executionId: string): boolean {
    return this.emitter.listenerCount(`progress:${executionId}`) > 0 || this.isWatchedElsewhere(executionId);
  }

  private isWatchedElsewhere(executionId: string): boolean {
    const until = this.watchedElsewhere.get(executionId);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.watchedElsewhere.delete(executionId);
    return false;
  }

  /** Whether anyone is subscribed to this run's completion (a `wait` in progress). */
  awaited(executionId: string): boolean {
    return this.emitter.listenerCount(`finished:${executionId}`) > 0;
  }

  /** A cancel was recorded for this run (see `onCancel`). */
  cancelRequested(executionId: string): void {
    this.bus?.publish({ k: 'c', id: executionId } satisfies BusMessage);
    this.emitter.emit(`cancel:${executionId}`);
  }

  /** The worker running this run here hears its cancel without reading the flag at every node boundary; returns the unsubscribe. */
  onCancel(executionId: string, listener: () => void): () => void {
    this.emitter.on(`cancel:${executionId}`, listener);
    return () => this.emitter.off(`cancel:${executionId}`, listener);
  }

  progressed(executionId: string): void {
    if (this.bus && this.isWatchedElsewhere(executionId)) this.bus.publish({ k: 'p', id: executionId } satisfies BusMessage);
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
    if (onProgress) {
      this.emitter.on(`progress:${executionId}`, onProgress);
      // The run may be executing on another instance: ask it to report its steps here.
      this.bus?.publish({ k: 'w', id: executionId, ms } satisfies BusMessage);
    }
    return { ended, close: () => done(undefined) };
  }

  /** Resolves on completion (at once when the run already ended in this process), or after `ms` with undefined; `onProgress` fires after each step. */
  async waitFor(executionId: string, ms: number, onProgress?: () => void): Promise<string | undefined> {
    const ended = this.ended.get(executionId);
    if (ended !== undefined) return ended;
    return (await this.subscribe(executionId, ms, onProgress).ended)?.status;
  }
}
