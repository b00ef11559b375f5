import { EventEmitter } from 'node:events';

/**
 * In-process notifications of run progress and completion, so `wait` wakes
 * the moment a run ends instead of polling the database in a loop.
 */
export class RunEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  finished(executionId: string, status: string): void {
    this.emitter.emit(`finished:${executionId}`, status);
  }

  /** Whether anyone follows this run's steps (progress notifications). */
  watched(executionId: string): boolean {
    return this.emitter.listenerCount(`progress:${executionId}`) > 0;
  }

  progressed(executionId: string): void {
    this.emitter.emit(`progress:${executionId}`);
  }

  /** Resolves on completion, or after `ms` with undefined; `onProgress` fires after each step. */
  waitFor(executionId: string, ms: number, onProgress?: () => void): Promise<string | undefined> {
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
