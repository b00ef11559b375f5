import type { Services } from '../services.ts';
import { RunEvents } from './run-events.ts';
import { builtInRunners } from './runners/index.ts';
import type { NodeRunner } from './runners/types.ts';
import { createScheduler, type Scheduler } from './scheduler.ts';
import { createChainTriggerWatcher, type ChainTriggerWatcher } from './chain-triggers/watcher.ts';
import { createWorker, type Admission, type WorkerOptions } from './worker.ts';
import type { MessageBus } from '../store/pg-bus.ts';

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
  /** Several instances on one database (PostgreSQL): run events and pending work reach all of them through it. */
  bus?: MessageBus;
}

export function createEngine(services: Omit<Services, 'engine'>, options: EngineOptions = {}): Engine {
  // Runners receive the full services, engine included; the worker only reads them once runs start.
  const full = services as Services;
  const events = new RunEvents();
  const worker = createWorker(full, options.runners ?? builtInRunners, events, { ...options, shared: options.bus !== undefined });
  const scheduler = createScheduler(services.store, (id, organizationId) => worker.enqueue(id, organizationId), {
    tickMs: options.schedulerTickMs,
    maxQueuedPerOrg: services.config.engine.maxQueuedPerOrg,
    runDataPerOrgPerDayBytes: services.config.engine.runDataPerOrgPerDayBytes,
    maxSkippedRunsPerOrgPerDay: services.config.engine.maxSkippedRunsPerOrgPerDay,
  });
  const chainTriggers = createChainTriggerWatcher(full, (id, organizationId) => worker.enqueue(id, organizationId), options.chainTriggerPollMs ?? 2000);
  const engine: Engine = {
    events,
    scheduler,
    chainTriggers,
    enqueue: (id, organizationId) => worker.enqueue(id, organizationId),
    admit: (organizationId) => worker.admit(organizationId),
    async start() {
      if (options.bus) await events.attach(options.bus, () => worker.pull());
      await worker.start();
      scheduler.start();
      chainTriggers.start();
    },
    async stop() {
      scheduler.stop();
      await chainTriggers.stop();
      await worker.stop();
      await events.detach();
    },
  };
  full.engine = engine;
  return engine;
}
