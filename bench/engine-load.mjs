/**
 * The engine benchmark's load generator, run in a worker thread so the
 * client's own work (fetch, JSON) does not share the gateway's event loop —
 * as with an external load generator. Each sample is one full run through
 * the public REST API: POST execute, then GET wait until the run is terminal.
 */
import { parentPort, workerData } from 'node:worker_threads';

const { gatewayUrl, workflowId, headers, body, connections, warmupMs, durationMs } = workerData;

async function iteration() {
  const started = await fetch(`${gatewayUrl}/api/workflows/${workflowId}/execute`, { method: 'POST', headers, body });
  if (!started.ok) return false;
  const { executionId } = await started.json();
  const waited = await fetch(`${gatewayUrl}/api/workflows/executions/${executionId}/wait`, { headers });
  return (await waited.json()).status === 'success';
}

async function run(ms) {
  const samples = [];
  let failures = 0;
  const until = performance.now() + ms;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const start = performance.now();
        if (!(await iteration())) failures++;
        samples.push(performance.now() - start);
      }
    }),
  );
  return { samples, failures };
}

await run(warmupMs);
parentPort.postMessage(await run(durationMs));
