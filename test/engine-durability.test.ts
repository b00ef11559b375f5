import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createScheduler } from '../src/engine/scheduler.ts';
import { fetchJson, freePort, startTestGateway, tempDir } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';

const BIN = path.resolve('bin/flowgate.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function serve(env: Record<string, string>): Promise<{ child: ChildProcess; out: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve'], { env: { ...process.env, FLOWGATE_DEVNET: 'off', ...env } });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 30_000);
    child.stdout!.on('data', () => {
      if (out.includes('claude mcp add')) {
        clearTimeout(timer);
        resolve({ child, out: () => out });
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
}

describe('durability', () => {
  it('reaps a run whose gateway was killed mid-flight to system_error on restart, losing nothing else', async () => {
    const target = await startHttpTarget();
    const dataDir = tempDir();
    const port = await freePort();
    const env = {
      FLOWGATE_DATA_DIR: dataDir,
      PORT: String(port),
      FLOWGATE_ENGINE_LEASE_MS: '2000',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_RATE_LIMITS: 'off',
    };
    const base = `http://127.0.0.1:${port}`;
    try {
      const first = await serve(env);
      const key = /^\s+(svc_\S+)$/m.exec(first.out())![1]!;
      const api = (p: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${base}${p}`, { key, ...init });
      const create = (nodes: unknown[], edges: unknown[]) =>
        api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Crash', nodes, edges }) });
      const t = { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
      const quick = (
        await create(
          [t, { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } }],
          [{ source: 't', target: 's' }],
        )
      ).body.id;
      // Before the step that hangs: a For Each whose rows the engine commits in batches; all of them must survive the kill.
      const items = 100;
      const slow = (
        await create(
          [
            t,
            { id: 'loop', type: 'action', data: { label: 'Loop', config: { actionType: 'For Each', arraySource: '{{@t:Start.items}}' } } },
            {
              id: 'sq',
              type: 'action',
              data: { label: 'Square', config: { actionType: 'math/aggregate', operation: 'product', values: '[{{@loop:Loop.currentItem}}, 2]' } },
            },
            { id: 'col', type: 'action', data: { label: 'Collect', config: { actionType: 'Collect' } } },
            {
              id: 'h',
              type: 'action',
              data: { label: 'Hang', config: { actionType: 'HTTP Request', endpoint: `${target.url}/hang`, httpMethod: 'GET', timeout: 30000 } },
            },
          ],
          [
            { source: 't', target: 'loop' },
            { source: 'loop', target: 'sq' },
            { source: 'sq', target: 'col' },
            { source: 'col', target: 'h' },
          ],
        )
      ).body.id;

      const done = (await api(`/api/workflows/${quick}/execute`, { method: 'POST', body: '{}' })).body.executionId;
      expect((await api(`/api/workflows/executions/${done}/wait`)).body.status).toBe('success');
      const usedBefore = (await api('/api/organization/usage')).body.runData.used as number;
      const slowInput = { items: Array.from({ length: items }, (_, i) => i) };
      const startedSlow = await api(`/api/workflows/${slow}/execute`, {
        method: 'POST',
        body: JSON.stringify({ input: slowInput }),
      });
      expect(startedSlow.status, JSON.stringify(startedSlow.body)).toBe(200);
      const interrupted = startedSlow.body.executionId;
      // Killed once the hanging step is under way (its request reached the target), not at an arbitrary point before it.
      for (let i = 0; i < 100 && !target.hits.some((h) => h.url.startsWith('/hang')); i++) await sleep(100);
      expect((await api(`/api/workflows/executions/${interrupted}/status`)).body.status).toBe('running');

      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));

      const second = await serve(env);
      try {
        const final = (await api(`/api/workflows/executions/${interrupted}/wait?timeoutMs=20000`)).body;
        expect(final).toMatchObject({ status: 'system_error', completed: true });
        const status = (await api(`/api/workflows/executions/${interrupted}/status`)).body;
        expect(status.errorContext).toMatchObject({ reason: 'lease_expired', currentNodeId: 'h' });
        // The reaped run never reached the commit that counts a finished run's data, so the reaper charges what it keeps:
        // its graph copy, its input and the 102 steps it logged.
        const usedAfter = (await api('/api/organization/usage')).body.runData.used as number;
        expect(usedAfter - usedBefore).toBeGreaterThan(JSON.stringify(slowInput).length + 102 * 100);
        // Every step before the interrupted one is logged, complete and in order; the interrupted one ends with the run.
        const logs = ((await api(`/api/workflows/executions/${interrupted}/logs`)).body.logs as any[]).reverse();
        expect(logs.map((l) => l.nodeId)).toEqual(['t', 'loop', ...Array.from({ length: items }, () => 'sq'), 'col', 'h']);
        expect(logs.filter((l) => l.nodeId === 'sq').map((l) => [l.iterationIndex, l.status, l.output.data.result])).toEqual(
          Array.from({ length: items }, (_, i) => [i, 'success', i * 2]),
        );
        expect(logs.find((l) => l.nodeId === 'loop')).toMatchObject({ status: 'success' });
        expect(logs.at(-1)).toMatchObject({ nodeId: 'h', status: 'error', error: expect.stringContaining('Interrupted') });
        expect((await api(`/api/workflows/executions/${done}/status`)).body.status).toBe('success');
        // The restarted gateway runs new work normally.
        const fresh = (await api(`/api/workflows/${quick}/execute`, { method: 'POST', body: '{}' })).body.executionId;
        expect((await api(`/api/workflows/executions/${fresh}/wait`)).body.status).toBe('success');
      } finally {
        second.child.kill('SIGTERM');
        await new Promise((r) => second.child.once('exit', r));
      }
    } finally {
      await target.close();
    }
  }, 120_000);
});

describe('schedules', () => {
  const scheduled = {
    name: 'Every second',
    nodes: [
      { id: 't', type: 'trigger', data: { label: 'Tick', config: { triggerType: 'Schedule', scheduleCron: '* * * * * *', scheduleTimezone: 'UTC' } } },
      { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } },
    ],
    edges: [{ source: 't', target: 's' }],
  };

  it('runs each occurrence exactly once, across concurrent schedulers and a restart', async () => {
    const dataDir = tempDir();
    const env = { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_SCHEDULER_TICK_MS: '200' };
    let gw = await startTestGateway({ env, dataDir });
    const created = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key: gw.ownerKey, body: JSON.stringify(scheduled) });
    const workflowId = created.body.id;
    const store = () => gw.gateway.services.store;
    const occurrences = async () =>
      (await store().selectFrom('workflow_executions').select(['scheduled_for', 'status']).where('workflow_id', '=', workflowId).execute()).map(
        (r) => r.scheduled_for!,
      );

    await sleep(2500);
    const running = await occurrences();
    expect(running.length).toBeGreaterThanOrEqual(2);
    expect(new Set(running).size).toBe(running.length);

    // A second process's scheduler ticking the same due schedule at the same moment creates nothing extra.
    const row = await store().selectFrom('workflow_schedules').selectAll().where('workflow_id', '=', workflowId).executeTakeFirstOrThrow();
    const other = createScheduler(store(), () => {}, gw.gateway.services.config.engine);
    const at = new Date(row.next_run_at + 10);
    const [a, b] = await Promise.all([gw.gateway.services.engine.scheduler.tick(at), other.tick(at)]);
    expect(a.length + b.length).toBeLessThanOrEqual(1);
    const again = await other.tick(at);
    expect(again).toEqual([]);

    await gw.close();
    const beforeRestart = await (async () => {
      const s = (await startTestGateway({ env: { ...env, FLOWGATE_SCHEDULER_TICK_MS: '60000' }, dataDir })).gateway;
      const list = (await s.services.store.selectFrom('workflow_executions').select('scheduled_for').where('workflow_id', '=', workflowId).execute()).map(
        (r) => r.scheduled_for!,
      );
      await s.close();
      return list;
    })();
    await sleep(2500); // the gateway is down for a few occurrences
    gw = await startTestGateway({ env, dataDir });
    await sleep(700);
    const after = await occurrences();
    expect(new Set(after).size).toBe(after.length);
    const missed = after.filter((o) => !beforeRestart.includes(o) && Date.parse(o) < Date.now() - 900);
    // One catch-up run for the downtime, not one per missed second.
    expect(missed.length).toBeLessThanOrEqual(2);
    expect(after.length).toBeGreaterThan(beforeRestart.length);
    const runs = await store().selectFrom('workflow_executions').select('status').where('workflow_id', '=', workflowId).execute();
    expect(runs.filter((r) => r.status === 'success').length).toBeGreaterThan(0);
    await gw.close();
  }, 60_000);
});
