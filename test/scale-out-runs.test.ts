import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, freePort, tempDir } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { connectMcp } from './helpers/mcp.ts';
import { spawnGateway, startCluster, type Cluster } from './helpers/instances.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';

/**
 * Several `flowgate serve` processes on one PostgreSQL database (issue #19,
 * work distribution, cross-instance events, devnet): runs are claimed once,
 * pending work and completions travel by LISTEN/NOTIFY, a killed instance's
 * runs end or finish elsewhere, a schedule fires once per occurrence, the
 * rate-limit budget is one, and a second embedded devnet is refused.
 *
 * The main cluster runs with leases and `wait` re-reads set to ten minutes:
 * within this file the periodic sweep and the wait fallback never fire, so
 * anything picked up or woken across instances was woken by a notification.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TEN_MINUTES = String(10 * 60_000);
const SCHEDULE_MS = 120_000;

let postgres: TestPostgres;
let cluster: Cluster;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let db: pg.Pool;

beforeAll(async () => {
  [postgres, target] = await Promise.all([startPostgres(), startHttpTarget()]);
  cluster = await startCluster(postgres, {
    count: 3,
    keys: 1,
    env: {
      FLOWGATE_ENGINE_LEASE_MS: TEN_MINUTES,
      FLOWGATE_WAIT_RECHECK_MS: TEN_MINUTES,
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_RATE_LIMIT_EXECUTE_PER_KEY: '60',
      // 8 slots, 4 per organization: a burst of 24 runs on one instance leaves most of them pending (see below).
      FLOWGATE_ENGINE_CONCURRENCY: '8',
    },
  });
  db = new pg.Pool({ connectionString: cluster.databaseUrl, max: 2 });
  // The restart test drops this pool's idle connections too; the pool opens new ones on the next query.
  db.on('error', () => {});
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await db?.end();
  await target?.close();
  await postgres?.destroy();
});

const trigger = (config: Record<string, unknown> = { triggerType: 'Manual' }) => ({ id: 't', type: 'trigger', data: { label: 'Start', config } });
const sumGraph = {
  nodes: [trigger(), { id: 'sum', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1, 2, 3]' } } }],
  edges: [{ id: 'e1', source: 't', target: 'sum' }],
};
const slowGraph = (ms: number) => ({
  nodes: [
    trigger(),
    {
      id: 'slow',
      type: 'action',
      data: { label: 'Slow', config: { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms=${ms}`, httpMethod: 'GET', timeout: 30000 } },
    },
  ],
  edges: [{ id: 'e1', source: 't', target: 'slow' }],
});

const WAIT_TIMEOUT_MS = 30_000;

/** `wait` with a 30 s timeout; `beforeTimeout`: it answered before that ran out (woken, not timed out and re-read). */
async function waitOn(url: string, executionId: string) {
  const startedAt = Date.now();
  const response = await fetchJson(`${url}/api/workflows/executions/${executionId}/wait?timeoutMs=${WAIT_TIMEOUT_MS}`, { key: cluster.ownerKey });
  return { ...response, beforeTimeout: Date.now() - startedAt < WAIT_TIMEOUT_MS };
}

async function createWorkflow(url: string, key: string, body: Record<string, unknown>): Promise<string> {
  const created = await fetchJson(`${url}/api/workflows/create`, { method: 'POST', key, body: JSON.stringify(body) });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.id;
}

async function start(url: string, key: string, workflowId: string): Promise<string> {
  const started = await fetchJson(`${url}/api/workflows/${workflowId}/execute`, { method: 'POST', key, body: '{}' });
  expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
  return started.body.executionId;
}

/** Runs `count` tasks, at most `width` at a time. */
async function inParallel<T>(count: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

async function untilSettled(workflowId: string, expected: number, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ n: string }>(
      "select count(*) as n from workflow_executions where workflow_id = $1 and status in ('success', 'error', 'system_error', 'cancelled')",
      [workflowId],
    );
    if (Number(rows[0]!.n) >= expected) return;
    if (Date.now() > deadline) throw new Error(`only ${rows[0]!.n} of ${expected} runs settled`);
    await sleep(250);
  }
}

describe('several gateway instances on one PostgreSQL database', () => {
  let scheduledWorkflow: string;
  let scheduleStartedAt: number;

  // Started first and checked last, so its two minutes overlap the other tests (and the load they put on the instances).
  it('starts a schedule firing every 5 seconds on all three instances', async () => {
    scheduledWorkflow = await createWorkflow(cluster.instances[0]!.url, cluster.ownerKey, {
      name: 'Every 5 s',
      nodes: [trigger({ triggerType: 'Schedule', scheduleCron: '*/5 * * * * *', scheduleTimezone: 'UTC' }), sumGraph.nodes[1]],
      edges: sumGraph.edges,
    });
    scheduleStartedAt = Date.now();
  });

  it('shares the rate-limit budget: 60 direct executions per minute per key in total, not per instance', async () => {
    const key = cluster.keys[0]!;
    const statuses = await inParallel(90, 9, (i) =>
      fetchJson(`${cluster.instances[i % 3]!.url}/api/execute/transfer`, { method: 'POST', key, body: '{}' }).then((r) => r.status),
    );
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
    expect(statuses.filter((s) => s !== 429)).toHaveLength(60);
  });

  it('`wait` on one instance is woken by a run that ends on another', async () => {
    const [a, b] = cluster.instances;
    const workflowId = await createWorkflow(b!.url, cluster.ownerKey, { name: 'Slow on B', ...slowGraph(1500) });
    const executionId = await start(b!.url, cluster.ownerKey, workflowId);
    // A re-reads the row only at the wait's start and at its own deadline (FLOWGATE_WAIT_RECHECK_MS is ten minutes):
    // only B's completion notice can end it before its timeout.
    const done = await waitOn(a!.url, executionId);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'success', completed: true });
    expect(done.beforeTimeout).toBe(true);
    expect(done.body.output).toBeTruthy();
  }, 90_000);

  it('MCP progress on one instance follows the steps of a run executing on another', async () => {
    const [a, b] = cluster.instances;
    const step = (id: string) => ({ id, type: 'action', data: { label: `Step ${id}`, config: slowGraph(800).nodes[1]!.data.config } });
    const workflowId = await createWorkflow(b!.url, cluster.ownerKey, {
      name: 'Three steps on B',
      nodes: [trigger(), step('s1'), step('s2'), step('s3')],
      edges: [
        { id: 'e1', source: 't', target: 's1' },
        { id: 'e2', source: 's1', target: 's2' },
        { id: 'e3', source: 's2', target: 's3' },
      ],
    });
    const executionId = await start(b!.url, cluster.ownerKey, workflowId);
    const client = await connectMcp(a!.url, cluster.ownerKey);
    const notifications: { progress: number; message?: string }[] = [];
    try {
      const waited = await client.callTool({ name: 'wait_for_execution', arguments: { executionId, timeoutMs: WAIT_TIMEOUT_MS } }, undefined, {
        onprogress: (p) => notifications.push(p),
        timeout: 60_000,
      });
      expect((waited.structuredContent as { status: string }).status).toBe('success');
    } finally {
      await client.close();
    }
    // Besides the first report (read at the start of the wait), B's steps as they finished: A asked B to report them.
    const running = new Set(notifications.map((n) => n.message).filter((m) => m?.startsWith('running:')));
    expect(running.size, JSON.stringify(notifications)).toBeGreaterThanOrEqual(3);
  }, 90_000);

  it('a cancel sent to one instance stops the run on the instance running it', async () => {
    const [a, b] = cluster.instances;
    const workflowId = await createWorkflow(b!.url, cluster.ownerKey, {
      name: 'Two slow steps',
      nodes: [
        ...slowGraph(2000).nodes,
        { id: 'sum', type: 'action', data: { label: 'After', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } },
      ],
      edges: [...slowGraph(2000).edges, { id: 'e2', source: 'slow', target: 'sum' }],
    });
    const executionId = await start(b!.url, cluster.ownerKey, workflowId);
    // Cancel through A while B runs the first step: B hears it by notification and stops at the next boundary.
    for (let i = 0; i < 40 && target.hits.filter((h) => h.url.startsWith('/slow?ms=2000')).length === 0; i++) await sleep(50);
    const cancelled = await fetchJson(`${a!.url}/api/workflows/executions/${executionId}/cancel`, { method: 'POST', key: cluster.ownerKey, body: '{}' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBeLessThan(300);
    const done = await waitOn(a!.url, executionId);
    expect(done.body).toMatchObject({ status: 'cancelled', completed: true });
    expect(done.beforeTimeout).toBe(true);
    const { rows } = await db.query("select node_id from workflow_execution_logs where execution_id = $1 and node_id = 'sum'", [executionId]);
    expect(rows).toEqual([]);
  }, 90_000);

  it('runs left pending on one instance are taken by the idle others at once (a notification, not the sweep)', async () => {
    const [a] = cluster.instances;
    const workflowId = await createWorkflow(a!.url, cluster.ownerKey, { name: 'All on A', ...slowGraph(300) });
    // A holds at most 4 of them at once (its per-organization share); the rest wait pending until someone takes them.
    const ids = await inParallel(24, 24, () => start(a!.url, cluster.ownerKey, workflowId));
    await untilSettled(workflowId, ids.length);
    const { rows } = await db.query<{ lease_owner: string; status: string }>('select lease_owner, status from workflow_executions where workflow_id = $1', [
      workflowId,
    ]);
    expect(rows.every((r) => r.status === 'success')).toBe(true);
    // The sweep runs every five minutes here: the other two instances only learned of this work by NOTIFY.
    expect(new Set(rows.map((r) => r.lease_owner)).size).toBe(3);
  }, 120_000);

  it('1,000 runs started across the three instances each run exactly once', async () => {
    const workflowId = await createWorkflow(cluster.instances[0]!.url, cluster.ownerKey, { name: 'A thousand', ...sumGraph });
    const ids = await inParallel(1000, 30, (i) => start(cluster.instances[i % 3]!.url, cluster.ownerKey, workflowId));
    expect(new Set(ids).size).toBe(1000);
    await untilSettled(workflowId, 1000);

    const runs = await db.query<{ id: string; status: string; lease_owner: string }>(
      'select id, status, lease_owner from workflow_executions where workflow_id = $1',
      [workflowId],
    );
    expect(runs.rows).toHaveLength(1000);
    expect(runs.rows.filter((r) => r.status !== 'success')).toEqual([]);
    expect(new Set(runs.rows.map((r) => r.id))).toEqual(new Set(ids));
    // Claimed by all three instances (each worker's lease owner stays on the rows it finished).
    expect(new Set(runs.rows.map((r) => r.lease_owner)).size).toBe(3);
    // One log row per step per run: nothing ran twice.
    const logs = await db.query<{ node_id: string; n: string; runs: string }>(
      `select node_id, count(*) as n, count(distinct execution_id) as runs from workflow_execution_logs
       where execution_id in (select id from workflow_executions where workflow_id = $1) group by node_id`,
      [workflowId],
    );
    const sum = logs.rows.find((r) => r.node_id === 'sum');
    expect(sum).toMatchObject({ n: '1000', runs: '1000' });
    for (const row of logs.rows) expect(row.n).toBe(row.runs);
  }, 300_000);

  it('SIGKILL of an instance mid-run: its runs end terminal or finish elsewhere, none lost or run twice', async () => {
    // Short leases here (a second cluster on the same server), so the reaper acts within seconds.
    const killable = await startCluster(postgres, {
      count: 3,
      env: { FLOWGATE_ENGINE_LEASE_MS: '3000', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' },
    });
    const pool = new pg.Pool({ connectionString: killable.databaseUrl, max: 1 });
    try {
      const [victim, ...survivors] = killable.instances;
      const hitsBefore = target.hits.filter((h) => h.url.startsWith('/slow?ms=4000')).length;
      const workflowId = await createWorkflow(victim!.url, killable.ownerKey, { name: 'Slow', ...slowGraph(4000) });
      const ids = await inParallel(16, 16, () => start(victim!.url, killable.ownerKey, workflowId));
      // Kill it while it is inside its runs' slow step.
      for (let i = 0; i < 100; i++) {
        const { rows } = await pool.query<{ n: string }>("select count(*) as n from workflow_executions where workflow_id = $1 and status = 'running'", [
          workflowId,
        ]);
        if (Number(rows[0]!.n) >= 8) break;
        await sleep(100);
      }
      await sleep(500);
      await victim!.kill();

      const deadline = Date.now() + 90_000;
      let rows: { id: string; status: string; error_context: string | null }[] = [];
      for (;;) {
        rows = (await pool.query('select id, status, error_context from workflow_executions where workflow_id = $1', [workflowId])).rows;
        if (rows.every((r) => ['success', 'error', 'system_error', 'cancelled'].includes(r.status))) break;
        if (Date.now() > deadline) throw new Error(`runs left unsettled: ${JSON.stringify(rows.map((r) => r.status))}`);
        await sleep(250);
      }
      expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
      // The victim's runs were reaped by a survivor; every other run finished.
      const reaped = rows.filter((r) => r.status === 'system_error');
      expect(reaped.length).toBeGreaterThan(0);
      for (const r of reaped) expect(JSON.parse(r.error_context!)).toMatchObject({ reason: 'lease_expired' });
      expect(rows.filter((r) => r.status !== 'system_error').every((r) => r.status === 'success')).toBe(true);
      // Nothing ran twice: one slow-step log row per run at most, and the target saw exactly that many calls.
      const logs = await pool.query<{ execution_id: string; n: string }>(
        `select execution_id, count(*) as n from workflow_execution_logs where node_id = 'slow'
         and execution_id in (select id from workflow_executions where workflow_id = $1) group by execution_id`,
        [workflowId],
      );
      expect(logs.rows.every((r) => r.n === '1')).toBe(true);
      const hits = target.hits.filter((h) => h.url.startsWith('/slow?ms=4000')).length - hitsBefore;
      expect(hits).toBe(logs.rows.length);
      // The survivors still serve.
      for (const s of survivors) expect((await fetchJson(`${s.url}/healthz`)).status).toBe(200);
    } finally {
      await pool.end();
      await killable.close();
    }
  }, 180_000);

  it('refuses a second instance that would start its own embedded devnet on the same database', async () => {
    const databaseUrl = await postgres.createDatabase('devnet');
    const env = { FLOWGATE_DATABASE_URL: databaseUrl, FLOWGATE_MASTER_KEY: cluster.env.FLOWGATE_MASTER_KEY!, FLOWGATE_DEVNET: 'auto' };
    const firstDir = tempDir();
    const first = await spawnGateway(env, { dataDir: firstDir });
    try {
      const refused = await runServe({ ...env, FLOWGATE_DATA_DIR: tempDir() });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/already runs its own embedded devnet/);
      expect(refused.stderr).toMatch(/FLOWGATE_RPC_URL_31337/);
      expect(refused.stderr).toMatch(/FLOWGATE_DEVNET=off/);
      expect(refused.stderr).not.toContain(postgres.password);

      // Pointed at the first instance's chain, a second instance starts and shares it.
      const rpcUrl = fs.readFileSync(path.join(firstDir, 'devnet', 'rpc-url'), 'utf8').trim();
      const second = await spawnGateway({ ...env, FLOWGATE_RPC_URL_31337: rpcUrl });
      await second.stop();
    } finally {
      await first.stop();
    }
    // The lock goes with the instance that held it: the next instance may run the embedded devnet.
    const next = await spawnGateway(env);
    await next.stop();
  }, 120_000);

  it('the schedule fired each occurrence exactly once across the three instances', async () => {
    const left = scheduleStartedAt + SCHEDULE_MS - Date.now();
    if (left > 0) await sleep(left);
    const { rows } = await db.query<{ scheduled_for: string; status: string }>(
      "select scheduled_for, status from workflow_executions where workflow_id = $1 and trigger_type = 'Schedule' order by scheduled_for",
      [scheduledWorkflow],
    );
    const times = rows.map((r) => Date.parse(r.scheduled_for));
    // Every occurrence between the first and the last, 5 s apart, each once.
    expect(times.length).toBeGreaterThanOrEqual(SCHEDULE_MS / 5000 - 2);
    expect(new Set(times).size).toBe(times.length);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(5000);
    await untilSettled(scheduledWorkflow, rows.length);
    const settled = await db.query<{ status: string }>('select status from workflow_executions where workflow_id = $1', [scheduledWorkflow]);
    expect(settled.rows.every((r) => r.status === 'success')).toBe(true);
  }, 200_000);

  // Last: the database goes away (the schedule above would skip the occurrences it missed meanwhile).
  it('after the database was down and came back, completions reach the other instances again', async () => {
    const [a, b] = cluster.instances;
    await postgres.stop();
    await sleep(1000);
    await postgres.start();
    for (const instance of cluster.instances) {
      for (let i = 0; i < 100 && (await fetchJson(`${instance.url}/healthz`)).status !== 200; i++) await sleep(200);
    }
    const workflowId = await createWorkflow(b!.url, cluster.ownerKey, { name: 'After the outage', ...slowGraph(1500) });
    const executionId = await start(b!.url, cluster.ownerKey, workflowId);
    const done = await waitOn(a!.url, executionId);
    expect(done.body).toMatchObject({ status: 'success', completed: true });
    expect(done.beforeTimeout).toBe(true);
  }, 120_000);
});

/** `flowgate serve` expected to refuse to start: its exit code and what it printed. */
async function runServe(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.resolve('bin/flowgate.js'), 'serve'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', FLOWGATE_BASE_URL: `http://127.0.0.1:${port}`, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stderr };
}
