/**
 * Scale-out (issue #19): workflow runs/s and direct transfers/s with 1, 2 and
 * 3 `flowgate serve` processes on one PostgreSQL database, against one
 * process on SQLite (the embedded default) and, for transfers, raw viem to
 * the same anvil, all measured in this run. Everything shares this machine's
 * cores, so each row also gives the CPU every instance spent per operation
 * (from /proc): more instances on the same cores cannot add throughput, and
 * the CPU column shows where it goes.
 *
 * `BENCH_ONLY=scale npm run bench` runs these rows alone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEther } from 'viem';
import { startAnvil, type AnvilNode } from '../src/chains/anvil.ts';
import { loadConfig } from '../src/config.ts';
import { createGateway } from '../src/gateway.ts';
import { startPostgres, type TestPostgres } from '../scripts/embedded-postgres.ts';
import { spawnGateway, type SpawnedGateway } from '../scripts/gateway-process.ts';
import { timedLoop, viemTransfers, type Sample } from './devnet-bench.ts';
import { processCpuMs } from './stats.ts';

const RUNS_IN_FLIGHT = 64;
const TRANSFERS_IN_FLIGHT = 16;
const MASTER_KEY = 'ef'.repeat(32);
const TO = '0x000000000000000000000000000000000000bEEF';

const trigger = { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
const action = (id: string, label: string, config: Record<string, unknown>) => ({ id, type: 'action', data: { label, config } });
/** The engine rows' workflow (bench/run.ts): Manual → Condition → math/aggregate. */
const WORKFLOW = {
  name: 'Scale-out bench',
  nodes: [
    trigger,
    action('c', 'Check', { actionType: 'Condition', condition: '{{@t:Start.amount}} > 3' }),
    action('m', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[{{@t:Start.amount}}, 1]' }),
  ],
  edges: [
    { id: 'e1', source: 't', target: 'c' },
    { id: 'e2', source: 'c', target: 'm', sourceHandle: 'true' },
  ],
};

interface Deployment {
  instances: SpawnedGateway[];
  ownerKey: string;
  workflowId: string;
  close(): Promise<void>;
}

/**
 * Seeds a store in process (owner key, the workflow, a funded wallet), then
 * serves it with `count` spawned processes. `databaseUrl` undefined: SQLite in
 * one data directory (then count must be 1).
 */
async function deploy(count: number, anvil: AnvilNode, databaseUrl: string | undefined): Promise<Deployment> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-bench-scale-'));
  const env: Record<string, string> = {
    FLOWGATE_MASTER_KEY: MASTER_KEY,
    FLOWGATE_RATE_LIMITS: 'off',
    // The shared anvil is the devnet (test USDC, a funded wallet); nothing is spawned since its URL is given.
    FLOWGATE_DEVNET: 'auto',
    FLOWGATE_RPC_URL_31337: anvil.url,
    EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('100000').toString(),
    ...(databaseUrl ? { FLOWGATE_DATABASE_URL: databaseUrl } : {}),
  };
  const seed = await createGateway(loadConfig({ ...env, PORT: '0', FLOWGATE_DATA_DIR: dataDir, FLOWGATE_BASE_URL: 'http://127.0.0.1:3000' }));
  const url = await seed.listen();
  const ownerKey = seed.firstStart!.ownerKey;
  const created = await fetch(`${url}/api/workflows/create`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ownerKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(WORKFLOW),
  });
  const { id: workflowId } = (await created.json()) as { id: string };
  await seed.close();
  // SQLite: the spawned process serves the seeded directory; PostgreSQL: each instance its own directory, one database.
  const instances = await Promise.all(Array.from({ length: count }, () => spawnGateway(env, databaseUrl ? {} : { dataDir })));
  return {
    instances,
    ownerKey,
    workflowId,
    async close() {
      await Promise.all(instances.map((i) => i.stop()));
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface ScaleRow {
  name: string;
  sample: Sample;
  /** CPU ms per operation of each instance, or undefined for the viem anchor. */
  cpu?: number[];
}

/** `callers` concurrent loops for `seconds`, caller i on instance i mod N, with each instance's CPU per operation. */
async function measureOn(name: string, deployment: Deployment, seconds: number, callers: number, op: (url: string) => Promise<boolean>): Promise<ScaleRow> {
  const { instances } = deployment;
  await timedLoop(1, callers, (caller) => op(instances[caller % instances.length]!.url)); // warm-up
  const before = instances.map((i) => processCpuMs(i.pid));
  const sample = await timedLoop(seconds, callers, (caller) => op(instances[caller % instances.length]!.url));
  const operations = Math.max(1, sample.perSecond * seconds);
  return { name, sample, cpu: instances.map((i, n) => (processCpuMs(i.pid) - before[n]!) / operations) };
}

const runOnce = (deployment: Deployment) => async (url: string) => {
  const headers = { authorization: `Bearer ${deployment.ownerKey}`, 'content-type': 'application/json' };
  const started = await fetch(`${url}/api/workflows/${deployment.workflowId}/execute`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ input: { amount: 5 } }),
  });
  if (started.status >= 300) return false;
  const { executionId } = (await started.json()) as { executionId: string };
  const done = await fetch(`${url}/api/workflows/executions/${executionId}/wait`, { headers });
  return ((await done.json()) as { status?: string }).status === 'success';
};

const transferOnce = (deployment: Deployment) => async (url: string) => {
  const res = await fetch(`${url}/api/execute/transfer`, {
    method: 'POST',
    headers: { authorization: `Bearer ${deployment.ownerKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ chainId: 31337, recipientAddress: TO.toLowerCase(), amount: '0.000001' }),
  });
  return res.status === 202 && ((await res.json()) as { status: string }).status === 'completed';
};

async function rowsFor(
  label: string,
  count: number,
  anvil: AnvilNode,
  postgres: TestPostgres | undefined,
  seconds: number,
  kinds: ('runs' | 'transfers')[],
): Promise<ScaleRow[]> {
  const databaseUrl = postgres ? await postgres.createDatabase('bench_scale') : undefined;
  const deployment = await deploy(count, anvil, databaseUrl);
  const rows: ScaleRow[] = [];
  try {
    if (kinds.includes('runs'))
      rows.push(await measureOn(`runs (execute + wait), ${RUNS_IN_FLIGHT} in flight: ${label}`, deployment, seconds, RUNS_IN_FLIGHT, runOnce(deployment)));
    if (kinds.includes('transfers'))
      rows.push(await measureOn(`transfers, ${TRANSFERS_IN_FLIGHT} in flight: ${label}`, deployment, seconds, TRANSFERS_IN_FLIGHT, transferOnce(deployment)));
  } finally {
    await deployment.close();
  }
  return rows;
}

export async function benchScaleOut(seconds: number): Promise<void> {
  const anvil = await startAnvil({ chainId: 31337 });
  const postgres = await startPostgres();
  try {
    // Anchor for transfers: viem alone to the same anvil, one sender, same concurrency.
    const viem: ScaleRow = {
      name: `transfers, ${TRANSFERS_IN_FLIGHT} in flight: raw viem to the same anvil (anchor)`,
      sample: await viemTransfers(anvil.url, 6, TO)(seconds, TRANSFERS_IN_FLIGHT),
    };

    const rows = [
      ...(await rowsFor('1 instance on SQLite (anchor)', 1, anvil, undefined, seconds, ['runs', 'transfers'])),
      ...(await rowsFor('1 instance on PostgreSQL', 1, anvil, postgres, seconds, ['runs', 'transfers'])),
      ...(await rowsFor('2 instances on PostgreSQL', 2, anvil, postgres, seconds, ['runs'])),
      ...(await rowsFor('3 instances on PostgreSQL', 3, anvil, postgres, seconds, ['runs', 'transfers'])),
    ];
    const runsAnchor = rows.find((r) => r.name.startsWith('runs') && r.name.endsWith('SQLite (anchor)'))!;

    console.log(`\nScale-out on one machine (${os.cpus().length} cores shared by every instance, PostgreSQL and anvil; ${seconds}s per row)\n`);
    console.log(['| row | ops/s | p50 ms | p99 ms | vs anchor | CPU ms/op per instance | failures |', '|---|---:|---:|---:|---:|---:|---:|'].join('\n'));
    for (const row of [viem, ...rows]) {
      const anchor = row.name.startsWith('runs') ? runsAnchor : viem;
      const cpu = row.cpu ? row.cpu.map((c) => c.toFixed(2)).join(' / ') : '';
      const { perSecond, p50, p99, failures } = row.sample;
      console.log(`| ${row.name} | ${perSecond.toFixed(1)} | ${p50} | ${p99} | ${(perSecond / anchor.sample.perSecond).toFixed(2)}x | ${cpu} | ${failures} |`);
    }
  } finally {
    await postgres.destroy();
    await anvil.stop();
  }
}
