import type { Services } from '../services.ts';
import { RunEvents } from './run-events.ts';
import { builtInRunners } from './runners/index.ts';
import type { NodeRunner } from './runners/types.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { createWorker, type Worker, type WorkerOptions } from './worker.ts';

/** The running parts of the engine for one gateway process: worker, scheduler and run events. */
export interface Engine {
  events: RunEvents;
  enqueue(executionId: string): void;
  start(): Promise<void>;
  stop(): Promise<void>;
  scheduler: Scheduler;
}

export interface EngineOptions extends WorkerOptions {
  schedulerTickMs?: number;
  runners?: Readonly<Record<string, NodeRunner>>;
}

export function createEngine(services: Omit<Services, 'engine'>, options: EngineOptions = {}): Engine {
  const events = new RunEvents();
  let worker: Worker | undefined;
  let scheduler: Scheduler | undefined;
  const engine: Engine = {
    events,
    enqueue: (id) => worker?.enqueue(id),
    get scheduler() {
      return scheduler!;
    },
    async start() {
      await worker!.start();
      scheduler!.start();
    },
    async stop() {
      scheduler?.stop();
      await worker?.stop();
    },
  };
  // The worker needs the full services (runners receive them), which include this engine.
  const full = services as Services;
  full.engine = engine;
  worker = createWorker(full, options.runners ?? builtInRunners, events, options);
  scheduler = createScheduler(services.store, (id) => worker!.enqueue(id), options.schedulerTickMs);
  return engine;
}
