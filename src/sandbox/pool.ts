import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { SandboxJob, SandboxOutcome, WorkerMessage } from './protocol.ts';

/**
 * Sandbox worker threads. QuickJS runs synchronously, so it runs off the
 * gateway's thread: a job at its time limit blocks a worker, not the event
 * loop. A watchdog terminates a worker whose job overruns its limit by
 * KILL_GRACE_MS (a native built-in such as `Array(2**32-1).indexOf(1)` never
 * reaches the interrupt handler), and a worker whose module may be damaged is
 * replaced.
 */

/**
 * Upper bound on concurrent evaluations; workers start on demand. At least
 * two, so one runaway snippet cannot stall every Condition in the gateway.
 */
const MAX_WORKERS = Math.min(4, Math.max(2, availableParallelism()));
/**
 * Workers one organization may hold at once: half, rounded up, so another
 * tenant always finds a worker that a loop at its time limit cannot hold.
 */
const perTenantCap = (maxWorkers: number) => Math.max(1, Math.ceil(maxWorkers / 2));
/** Queue key of jobs that name no organization (internal callers): not capped. */
const UNTENANTED = '';
const KILL_GRACE_MS = 1000;
const BOOT_TIMEOUT_MS = 30_000;
/**
 * A large native stack for the worker, so QuickJS's own stack check (512 KB of
 * emscripten stack) always trips first: deeply nested source parses use far
 * more native stack per level than they use emscripten stack.
 */
const WORKER_STACK_MB = 64;
/** The worker's JS heap (QuickJS's memory is WebAssembly memory, outside it). */
const WORKER_HEAP_MB = 256;

interface Pending {
  job: SandboxJob;
  tenant: string;
  resolve(outcome: SandboxOutcome): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  dead: boolean;
  current?: Pending;
  timer?: NodeJS.Timeout;
}

/**
 * tsx's ESM API as a file URL, from its package.json `exports` (its CommonJS
 * build cannot register hooks from a worker, and a data: URL module cannot
 * resolve bare specifiers).
 */
function tsxApiUrl(): string {
  const packageFile = createRequire(import.meta.url).resolve('tsx/package.json');
  const manifest = JSON.parse(readFileSync(packageFile, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  return new URL(manifest.exports['./esm/api']!.import.default, pathToFileURL(packageFile)).href;
}

/**
 * The worker entry is TypeScript, so the worker first registers tsx (as
 * bin/flowgate.js does for the main thread), then imports the entry. The
 * bootstrap is a constant module given as a data: URL.
 */
function bootstrapUrl(): URL {
  const entry = new URL('./worker.ts', import.meta.url).href;
  const source = [`const { register } = await import(${JSON.stringify(tsxApiUrl())});`, `register();`, `await import(${JSON.stringify(entry)});`].join('\n');
  return new URL(`data:text/javascript,${encodeURIComponent(source)}`);
}

/**
 * The queue is fair across organizations: one queue per organization, served
 * round-robin, and an organization with `perTenant` jobs running waits for
 * one of its own to finish (while other organizations' jobs go ahead), so a
 * tenant's runaway loops never delay another tenant's code by more than the
 * fair share.
 */
export class SandboxPool {
  private readonly slots: Slot[] = [];
  /** Per-organization queues; Map order is the round-robin order (a served organization moves to the back). */
  private readonly queues = new Map<string, Pending[]>();
  /** Jobs running per organization. */
  private readonly busy = new Map<string, number>();
  private nextId = 1;

  constructor(
    private readonly maxWorkers = MAX_WORKERS,
    private readonly perTenant = perTenantCap(maxWorkers),
  ) {}

  /** Runs a job; `organizationId` names the tenant whose share it counts against. */
  run(job: Omit<SandboxJob, 'id'>, organizationId?: string): Promise<SandboxOutcome> {
    return new Promise((resolve, reject) => {
      const tenant = organizationId || UNTENANTED;
      const queue = this.queues.get(tenant);
      const pending = { job: { ...job, id: this.nextId++ }, tenant, resolve, reject };
      if (queue) queue.push(pending);
      else this.queues.set(tenant, [pending]);
      this.pump();
    });
  }

  /** Stops every worker; queued and running jobs fail. */
  async close(): Promise<void> {
    const error = new Error('The sandbox was shut down.');
    for (const pending of this.drain()) pending.reject(error);
    await Promise.all([...this.slots].map((slot) => this.retire(slot, error)));
  }

  private drain(): Pending[] {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    return all;
  }

  /** How many more jobs `tenant` may start now. */
  private room(tenant: string): number {
    return tenant === UNTENANTED ? Number.POSITIVE_INFINITY : this.perTenant - (this.busy.get(tenant) ?? 0);
  }

  /** The first organization in round-robin order with a queued job it may start. */
  private nextTenant(): string | undefined {
    for (const tenant of this.queues.keys()) if (this.room(tenant) > 0) return tenant;
    return undefined;
  }

  /** Takes the tenant's next job and moves the tenant to the back of the round. */
  private take(tenant: string): Pending {
    const queue = this.queues.get(tenant)!;
    const pending = queue.shift()!;
    this.queues.delete(tenant);
    if (queue.length > 0) this.queues.set(tenant, queue);
    return pending;
  }

  /** Jobs that could start now if there were idle workers. */
  private startable(): number {
    let count = 0;
    for (const [tenant, queue] of this.queues) count += Math.min(queue.length, Math.max(0, this.room(tenant)));
    return count;
  }

  /** A job left its worker (finished, timed out or lost with it): its organization's share frees up. */
  private released(pending: Pending): void {
    const left = (this.busy.get(pending.tenant) ?? 1) - 1;
    if (left > 0) this.busy.set(pending.tenant, left);
    else this.busy.delete(pending.tenant);
  }

  private pump(): void {
    for (;;) {
      const tenant = this.nextTenant();
      if (tenant === undefined) return;
      const idle = this.slots.find((slot) => slot.ready && !slot.current && !slot.dead);
      if (idle) {
        this.dispatch(idle, this.take(tenant));
        continue;
      }
      const booting = this.slots.filter((slot) => !slot.ready && !slot.dead).length;
      if (this.startable() > booting && this.slots.length < this.maxWorkers) {
        this.spawn();
        continue;
      }
      return;
    }
  }

  private spawn(): void {
    const worker = new Worker(bootstrapUrl(), {
      execArgv: [],
      resourceLimits: { stackSizeMb: WORKER_STACK_MB, maxOldGenerationSizeMb: WORKER_HEAP_MB },
    });
    // An idle worker must not keep the process alive; a busy one does (see dispatch).
    worker.unref();
    const slot: Slot = { worker, ready: false, dead: false };
    this.slots.push(slot);
    slot.timer = setTimeout(() => void this.retire(slot, new Error(`The sandbox did not start within ${BOOT_TIMEOUT_MS} ms.`)), BOOT_TIMEOUT_MS);
    slot.timer.unref();

    worker.on('message', (message: WorkerMessage) => {
      if (slot.dead) return;
      if (message.type === 'ready') {
        clearTimeout(slot.timer);
        slot.ready = true;
        this.pump();
      } else if (message.type === 'outcome') {
        this.finish(slot, message.outcome);
      }
    });
    worker.on('error', (error) => void this.retire(slot, error));
    worker.on('exit', (code) => void this.retire(slot, new Error(`The sandbox worker exited (code ${code}).`)));
  }

  private dispatch(slot: Slot, pending: Pending): void {
    slot.current = pending;
    this.busy.set(pending.tenant, (this.busy.get(pending.tenant) ?? 0) + 1);
    slot.worker.ref();
    const { job } = pending;
    slot.timer = setTimeout(() => {
      // The interrupt handler did not stop the code: kill the thread.
      const outcome: SandboxOutcome = {
        id: job.id,
        ok: false,
        kind: 'timeout',
        message: `${job.subject} exceeded its ${job.timeoutMs} ms time limit`,
        logs: [],
      };
      slot.current = undefined;
      this.released(pending);
      pending.resolve(outcome);
      void this.retire(slot, new Error('terminated by the watchdog'));
    }, job.timeoutMs + KILL_GRACE_MS);
    slot.worker.postMessage(job);
  }

  private finish(slot: Slot, outcome: SandboxOutcome): void {
    const pending = slot.current;
    if (!pending || pending.job.id !== outcome.id) return;
    clearTimeout(slot.timer);
    slot.current = undefined;
    this.released(pending);
    slot.worker.unref();
    pending.resolve(outcome);
    if (!outcome.ok && outcome.recycle) void this.retire(slot, new Error('recycled'));
    else this.pump();
  }

  /** Removes a worker; its running job fails with `error`. A worker that never started fails the queue too. */
  private async retire(slot: Slot, error: Error): Promise<void> {
    if (slot.dead) return;
    slot.dead = true;
    clearTimeout(slot.timer);
    this.slots.splice(this.slots.indexOf(slot), 1);
    const current = slot.current;
    slot.current = undefined;
    if (current) {
      this.released(current);
      const memory = (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
      current.resolve({
        id: current.job.id,
        ok: false,
        kind: memory ? 'memory' : 'runtime',
        message: memory
          ? `${current.job.subject} exceeded the sandbox's memory`
          : `${current.job.subject} could not finish: the sandbox worker failed (${error.message})`,
        logs: [],
      });
    }
    if (!slot.ready) {
      // Failing to start is not transient enough to retry in a loop.
      const failure = new Error(`The code sandbox could not start: ${error.message}`);
      for (const pending of this.drain()) pending.reject(failure);
    }
    await slot.worker.terminate().catch(() => undefined);
    this.pump();
  }
}
