import { parentPort } from 'node:worker_threads';
import { loadModule, runJob } from './evaluate.ts';
import { DEFAULT_MEMORY_BYTES } from './limits.ts';
import type { SandboxJob, WorkerMessage } from './protocol.ts';

/**
 * Entry point of a sandbox worker thread. The pool sends one job at a time;
 * each runs synchronously in a fresh QuickJS runtime, so a long job blocks
 * this thread only, never the gateway's event loop.
 */

const port = parentPort;
if (!port) throw new Error('src/sandbox/worker.ts runs as a worker thread; import src/sandbox/quickjs.ts instead.');

const send = (message: WorkerMessage) => port.postMessage(message);

port.on('message', async (job: SandboxJob) => {
  try {
    const module = await loadModule(job.memoryBytes);
    send({ type: 'outcome', outcome: runJob(module, job) });
  } catch (error) {
    const message = `${job.subject} could not be run: the sandbox failed to start (${error instanceof Error ? error.message : String(error)})`;
    send({ type: 'outcome', outcome: { id: job.id, ok: false, kind: 'runtime', message, logs: [], recycle: true } });
  }
});

await loadModule(DEFAULT_MEMORY_BYTES);
send({ type: 'ready' });
