import type { Services } from '../services.ts';
import { RunEvents } from './run-events.ts';
import { builtInRunners } from './runners/index.ts';
import type { NodeRunner } from './runners/types.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { createChainTriggerWatcher, type ChainTriggerWatcher } from './chain-triggers/watcher.ts';
import { createWorker, type Admission, type WorkerOptions } from './worker.ts';

/** The running parts of the engine for one gateway process: worker, scheduler, chain-trigger watcher and run events. */
export interface Engine {
  events: RunEvents;
  enqueue(executionId: string, organizationId: string): void;
  /** A free worker slot for a run of `organizationId` about to be written (see Worker.admit). */
  admit(organizationId: string): Admission | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
  scheduler: Scheduler;
  chainTriggers: ChainTriggerWatcher;
}

export interface EngineOptions extends WorkerOptions {
  schedulerTickMs?: number;
  chainTriggerPollMs?: number;
  runners?: Readonly<Record<string, NodeRunner>>;
}

export function createEngine(services: Omit<Services, 'engine'>, options: EngineOptions = {}): Engine {
  // Runners receive the full services, engine included; the worker only reads them once runs start.
  const full = services as Services;
  const events = new RunEvents();
  const worker = createWorker(full, options.runners ?? builtInRunners, events, options);
  const scheduler = createScheduler(services.store, (id, organizationId) => worker.enqueue(id, organizationId), options.schedulerTickMs);
  const chainTriggers = createChainTriggerWatcher(full, (id, organizationId) => worker.enqueue(id, organizationId), options.chainTriggerPollMs ?? 2000);
  const engine: Engine = {
    events,
    scheduler,
    chainTriggers,
    enqueue: (id, organizationId) => worker.enqueue(id, organizationId),
    admit: (organizationId) => worker.admit(organizationId),
    async start() {
      await worker.start();
      scheduler.start();
      chainTriggers.start();
    },
    async stop() {
      scheduler.stop();
      await chainTriggers.stop();
      await worker.stop();
    },
  };
  full.engine = engine;
  return engine;
}
