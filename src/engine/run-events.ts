import { EventEmitter } from 'node:events';
import { isTerminal } from './executions.ts';

/** How many recent completions are remembered (see RunEvents.finished). */
const REMEMBERED_COMPLETIONS = 10_000;

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

  finished(executionId: string, status: string): void {
    // `unconfirmed` is not an end: its waiters keep waiting for the verification sweep's verdict.
    if (isTerminal(status)) this.remember(executionId, status);
    this.emitter.emit(`finished:${executionId}`, status);
  }

  private remember(executionId: string, status: string): void {
    if (this.ended.size >= REMEMBERED_COMPLETIONS) this.ended.delete(this.ended.keys().next().value!);
    this.ended.set(executionId, status);
  }

  /** Whether anyone follows this run's steps (progress notifications). */
  watched(executionId: string): boolean {
    return this.emitter.listenerCount(`progress:${executionId}`) > 0;
  }

  progressed(executionId: string): void {
    this.emitter.emit(`progress:${executionId}`);
  }

  /** Resolves on completion (at once when the run already ended in this process), or after `ms` with undefined; `onProgress` fires after each step. */
  waitFor(executionId: string, ms: number, onProgress?: () => void): Promise<string | undefined> {
    const ended = this.ended.get(executionId);
    if (ended !== undefined) return Promise.resolve(ended);
    return new Promise((resolve) => {
      const done = (status?: string) => {
        clearTimeout(timer);
        this.emitter.off(`finished:${executionId}`, done);
        if (onProgress) this.emitter.off(`progress:${executionId}`, onProgress);
        resolve(status);
      };
      const timer = setTimeout(() => done(undefined), ms);
      this.emitter.on(`finished:${executionId}`, done);
      if (onProgress) this.emitter.on(`progress:${executionId}`, onProgress);
    });
  }
}
