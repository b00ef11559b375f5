/**
 * `npm run bench`: requests/s and p50/p99 latency for the gateway's hot read
 * paths against a bare express JSON route served by the same process (the
 * baseline), each reported as a ratio to that baseline.
 */
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import express from 'express';
import { loadConfig } from '../src/config.ts';
import { createGateway } from '../src/gateway.ts';
import { newId, nowIso } from '../src/ids.ts';
import { chainGraph } from '../test/helpers/workflows.ts';
import { benchDirectExecution } from './direct-execution.ts';
import { benchPayments } from './payments.ts';

const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
/** `BENCH_ONLY=engine` runs the baseline and the engine rows only (for iterating on the engine). */
const ONLY_ENGINE = process.env.BENCH_ONLY === 'engine';
/**
 * Where the engine rows' load generator runs: `worker` (default) in a worker
 * thread, like an external client; `inline` in the gateway's own event loop,
 * as the first version of this benchmark did (kept for comparison).
 */
const ENGINE_CLIENT = process.env.BENCH_CLIENT === 'inline' ? 'inline' : 'worker';

interface Row {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function measure(name: string, options: autocannon.Options): Promise<Row> {
  // Warm-up so JIT and caches settle before the measured run.
  await autocannon({ ...options, duration: 1, connections: CONNECTIONS });
  const result = await autocannon({ ...options, duration: DURATION_SECONDS, connections: CONNECTIONS });
  return { name, requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors };
}

/** Runs `iteration` from `CONNECTIONS` concurrent loops for the duration; each iteration is one timed sample. */
async function measureLoop(name: string, iteration: () => Promise<boolean>): Promise<Row> {
  const run = async (ms: number) => {
    const samples: number[] = [];
    let failures = 0;
    const until = performance.now() + ms;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < until) {
          const start = performance.now();
          if (!(await iteration())) failures++;
          samples.push(performance.now() - start);
        }
      }),
    );
    return { samples, failures };
  };
  await run(1000);
  return summarize(name, await run(DURATION_SECONDS * 1000));
}

function summarize(name: string, { samples, failures }: { samples: number[]; failures: number }): Row {
  samples.sort((a, b) => a - b);
  const at = (q: number) => Math.round(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]! * 10) / 10;
  return { name, requestsPerSecond: samples.length / DURATION_SECONDS, p50: at(0.5), p99: at(0.99), non2xx: failures };
}

type Gateway = Awaited<ReturnType<typeof createGateway>>;

/** The same execute + wait loop as measureLoop, from a worker thread (bench/engine-load.mjs). */
function measureInWorker(name: string, target: { gatewayUrl: string; workflowId: string; headers: Record<string, string>; body: string }): Promise<Row> {
  const worker = new Worker(new URL('./engine-load.mjs', import.meta.url), {
    workerData: { ...target, connections: CONNECTIONS, warmupMs: 1000, durationMs: DURATION_SECONDS * 1000 },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (result: { samples: number[]; failures: number }) => {
      resolve(summarize(name, result));
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

/** 10,000 stored workflows for the list benchmark, inserted in one transaction. */
async function seedWorkflows(gateway: Gateway, organizationId: string, count: number) {
  const graph = chainGraph(3);
  const nodes = JSON.stringify(graph.nodes);
  const edges = JSON.stringify(graph.edges);
  await gateway.services.store.transaction().execute(async (trx) => {
    for (let i = 0; i < count; i += 500) {
      const rows = Array.from({ length: Math.min(500, count - i) }, (_, j) => {
        const at = new Date(Date.UTC(2026, 0, 1) + (i + j) * 1000).toISOString();
        return {
          id: newId(), organization_id: organizationId, user_id: null, name: `Seeded ${i + j}`, description: null, visibility: 'private' as const,
          nodes, edges, project_id: null, tag_id: null, enabled: 1, claim_token_hash: null, featured: 0, featured_category: null,
          featured_protocol: null, featured_order: null, published_at: null, created_at: at, updated_at: nowIso(),
        };
      });
      await trx.insertInto('workflows').values(rows).execute();
    }
  });
}

/** The gateway's hot read paths and workflow writes (skipped with BENCH_ONLY=engine). */
async function measureReadPaths(gateway: Gateway, gatewayUrl: string, auth: Record<string, string>): Promise<Row[]> {
  const rows: Row[] = [];
  const mcpCall = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_chains', arguments: {} } });
  rows.push(
    await measure('GET /api/chains', { url: `${gatewayUrl}/api/chains` }),
    await measure('MCP tools/call list_chains', {
      url: `${gatewayUrl}/mcp`,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: mcpCall,
    }),
  );

  // Workflows: create + get of a 20-node graph, and a 50-row page over 10,000 stored workflows.
  const createBody = JSON.stringify({ name: 'Bench 20 nodes', ...chainGraph(20) });
  rows.push(
    await measureLoop('create + get 20-node workflow (one sample = both)', async () => {
      const created = await fetch(`${gatewayUrl}/api/workflows/create`, { method: 'POST', headers: auth, body: createBody });
      if (!created.ok) return false;
      const { id } = (await created.json()) as { id: string };
      const fetched = await fetch(`${gatewayUrl}/api/workflows/${id}`, { headers: auth });
      await fetched.arrayBuffer();
      return fetched.ok;
    }),
  );
  const benchOrg = await gateway.services.organizations.ensure('bench');
  const benchKey = (await gateway.services.keys.create({ organizationId: benchOrg.organization.id, userId: benchOrg.owner.id, name: 'bench', scope: null })).key;
  await seedWorkflows(gateway, benchOrg.organization.id, 10_000);
  rows.push(await measure('GET /api/workflows?limit=50 (10,000 stored)', { url: `${gatewayUrl}/api/workflows?limit=50&offset=5000`, headers: { authorization: `Bearer ${benchKey}` } }));
  return rows;
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-bench-'));
  const gateway = await createGateway(
    loadConfig({ PORT: '0', FLOWGATE_DATA_DIR: dataDir, FLOWGATE_DEVNET: 'off', FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_BASE_URL: 'http://127.0.0.1:3000' }),
  );
  const gatewayUrl = await gateway.listen();

  // Baseline: the smallest express JSON route, same process, same machine.
  const bare = express();
  const payload = { ok: true, chains: [{ chainId: 1, name: 'Ethereum' }] };
  bare.get('/bare', (_req, res) => res.json(payload));
  const bareServer = http.createServer(bare);
  await new Promise<void>((resolve) => bareServer.listen(0, '127.0.0.1', resolve));
  const bareUrl = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}`;

  const rows = [await measure('bare express JSON route (baseline)', { url: `${bareUrl}/bare` })];
  const key = gateway.firstStart!.ownerKey;
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  if (!ONLY_ENGINE) rows.push(...(await measureReadPaths(gateway, gatewayUrl, auth)));

  // Engine: executions/s end to end (execute + wait), and per-step overhead from the stored runs.
  const engineRows: { name: string; executionsPerSecond: number; stepP50: number; stepP99: number; failures: number }[] = [];
  const node = (id: string, label: string, config: Record<string, unknown>) => ({ id, type: 'action', data: { label, config } });
  const trigger = { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
  const engineWorkflows = [
    {
      name: 'Manual → Condition → math/aggregate',
      steps: 3,
      nodes: [trigger, node('c', 'Check', { actionType: 'Condition', condition: '{{@t:Start.amount}} > 3' }), node('m', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[{{@t:Start.amount}}, 1]' })],
      edges: [{ source: 't', target: 'c' }, { source: 'c', target: 'm', sourceHandle: 'true' }],
      input: { amount: 5 },
    },
    {
      name: 'For Each over 100 items (math/aggregate body)',
      steps: 103,
      nodes: [trigger, node('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.items}}' }), node('m', 'Square', { actionType: 'math/aggregate', operation: 'product', values: '[{{@loop:Loop.currentItem}}, {{@loop:Loop.currentItem}}]' }), node('col', 'Collect', { actionType: 'Collect' })],
      edges: [{ source: 't', target: 'loop' }, { source: 'loop', target: 'm' }, { source: 'm', target: 'col' }],
      input: { items: Array.from({ length: 100 }, (_, i) => i) },
    },
  ];
  for (const wf of engineWorkflows) {
    const created = await fetch(`${gatewayUrl}/api/workflows/create`, { method: 'POST', headers: auth, body: JSON.stringify({ name: wf.name, nodes: wf.nodes, edges: wf.edges }) });
    if (!created.ok) throw new Error(`bench workflow "${wf.name}" was refused: ${await created.text()}`);
    const { id } = (await created.json()) as { id: string };
    const body = JSON.stringify({ input: wf.input });
    const label = `run: ${wf.name} (${ENGINE_CLIENT} client)`;
    const row =
      ENGINE_CLIENT === 'worker'
        ? await measureInWorker(label, { gatewayUrl, workflowId: id, headers: auth, body })
        : await measureLoop(label, async () => {
            const started = await fetch(`${gatewayUrl}/api/workflows/${id}/execute`, { method: 'POST', headers: auth, body });
            if (!started.ok) return false;
            const { executionId } = (await started.json()) as { executionId: string };
            const waited = await fetch(`${gatewayUrl}/api/workflows/executions/${executionId}/wait`, { headers: auth });
            return ((await waited.json()) as { status: string }).status === 'success';
          });
    rows.push(row);
    const runs = await gateway.services.store.selectFrom('workflow_executions').select(['started_at', 'completed_at']).where('workflow_id', '=', id).where('status', '=', 'success').execute();
    const perStep = runs.map((r) => (Date.parse(r.completed_at!) - Date.parse(r.started_at!)) / wf.steps).sort((a, b) => a - b);
    const at = (q: number) => Math.round(perStep[Math.min(perStep.length - 1, Math.floor(q * perStep.length))]! * 100) / 100;
    engineRows.push({ name: wf.name, executionsPerSecond: row.requestsPerSecond, stepP50: at(0.5), stepP99: at(0.99), failures: row.non2xx });
  }

  const baseline = rows[0]!;
  console.log(`\nFlowgate benchmark: ${DURATION_SECONDS}s per row, ${CONNECTIONS} connections, node ${process.version}, ${os.cpus().length} cores\n`);
  console.log(['| path | req/s | p50 ms | p99 ms | req/s vs baseline | p50 vs baseline | errors |', '|---|---:|---:|---:|---:|---:|---:|'].join('\n'));
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${row.requestsPerSecond.toFixed(0)} | ${row.p50} | ${row.p99} | ${(row.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x | ${(row.p50 / Math.max(baseline.p50, 1)).toFixed(2)}x | ${row.non2xx} |`,
    );
  }

  const N8N_PUBLISHED_EXECUTIONS_PER_SECOND = 220;
  console.log(`\nEngine (end to end through REST: execute + wait, ${ENGINE_CLIENT} client; per-step overhead = run time / steps, from stored runs)\n`);
  console.log(['| workflow | executions/s | per-step p50 ms | per-step p99 ms | vs n8n 220/s (2 vCPU) | failures |', '|---|---:|---:|---:|---:|---:|'].join('\n'));
  for (const row of engineRows) {
    console.log(`| ${row.name} | ${row.executionsPerSecond.toFixed(1)} | ${row.stepP50} | ${row.stepP99} | ${(row.executionsPerSecond / N8N_PUBLISHED_EXECUTIONS_PER_SECOND).toFixed(2)}x | ${row.failures} |`);
  }

  bareServer.close();
  await gateway.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  if (ONLY_ENGINE) return;
  await benchDirectExecution(DURATION_SECONDS, CONNECTIONS);
  await benchPayments(DURATION_SECONDS, CONNECTIONS);
}

await main();
// The payments rows leave something keeping the event loop alive for minutes after everything is closed.
process.exit(0);
