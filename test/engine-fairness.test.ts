import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { pendingExecutionIds } from '../src/engine/executions.ts';
import { closeSandbox } from '../src/sandbox/quickjs.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { orgIdentity } from './helpers/org-fixtures.ts';
import { action, linear } from './helpers/web3.ts';

/**
 * Fair shares between tenants (issue 12, A3): organization A saturating the
 * engine with runaway sandbox loops must not hold up organization B's runs,
 * whether they use the sandbox or not.
 */

let gw: TestGateway;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  // Defaults on purpose: the engine's slots and each organization's share of them, the sandbox pool sized by the machine.
  // A long lease keeps the periodic sweep out of the way of the rows the second test writes.
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_ENGINE_LEASE_MS: '600000' } });
  keyA = gw.ownerKey;
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  // The sandbox first: A's loops end at once, so the gateway closes with no run in flight.
  await closeSandbox();
  await gw?.close();
});

const api = (key: string, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });

async function create(key: string, graph: { nodes: unknown[]; edges: unknown[] }): Promise<string> {
  const res = await api(key, '/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'fairness', ...graph }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

async function start(key: string, workflowId: string): Promise<string> {
  const res = await api(key, `/api/workflows/${workflowId}/execute`, { method: 'POST', body: '{}' });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.executionId;
}

const status = async (key: string, executionId: string): Promise<string> => (await api(key, `/api/workflows/executions/${executionId}/status`)).body.status;

describe('one tenant cannot stall another', () => {
  test("B's sandbox and non-sandbox runs finish while A's runaway loops are all still running", async () => {
    const spin = await create(keyA, linear(action('spin', 'Spin', { actionType: 'code/run-code', code: 'while (true) {}', timeout: 10000 })));
    const answer = await create(keyB, linear(action('code', 'Answer', { actionType: 'code/run-code', code: 'return 42' })));
    const plain = await create(
      keyB,
      linear(
        action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' }),
        action('check', 'Check', { actionType: 'Condition', condition: '{{@sum:Sum.result}} > 3' }),
      ),
    );

    // Warm the sandbox pool first (two concurrent evaluations start two workers), so A's loops take
    // workers the moment its runs start, before B's runs arrive.
    const quick = await create(keyA, linear(action('one', 'One', { actionType: 'code/run-code', code: 'return 1' })));
    const warm = await Promise.all([start(keyA, quick), start(keyA, quick)]);
    for (const id of warm) expect((await api(keyA, `/api/workflows/executions/${id}/wait?timeoutMs=30000`)).body.status).toBe('success');

    // More runaway runs than A's share of the engine's slots (32 of 64 by default).
    const share = gw.gateway.services.config.engine.concurrencyPerOrg;
    const spinning = await Promise.all(Array.from({ length: share + 2 }, () => start(keyA, spin)));
    for (let i = 0; i < 100 && (await Promise.all(spinning.map((id) => status(keyA, id)))).filter((s) => s === 'running').length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }

    const [codeRun, plainRun] = await Promise.all([start(keyB, answer), start(keyB, plain)]);
    const [codeDone, plainDone] = await Promise.all([
      api(keyB, `/api/workflows/executions/${codeRun}/wait?timeoutMs=30000`),
      api(keyB, `/api/workflows/executions/${plainRun}/wait?timeoutMs=30000`),
    ]);
    // Read A's runs right after B's finished: none of A's 10-second loops may have ended yet.
    const aStatuses = await Promise.all(spinning.map((id) => status(keyA, id)));

    expect(codeDone.body.status, JSON.stringify(codeDone.body)).toBe('success');
    expect(plainDone.body.status, JSON.stringify(plainDone.body)).toBe('success');
    expect(
      aStatuses.every((s) => s === 'running' || s === 'pending'),
      aStatuses.join(','),
    ).toBe(true);
    // A is held to its share of the slots, not shut out: some of its runs are running, the rest wait their turn.
    expect(aStatuses.filter((s) => s === 'running').length).toBeGreaterThan(0);
    expect(aStatuses.filter((s) => s === 'pending').length).toBeGreaterThan(0);

    const logs = (await api(keyB, `/api/workflows/executions/${codeRun}/logs`)).body.logs as any[];
    expect(logs.find((l) => l.nodeId === 'code')?.output?.data?.result).toBe(42);

    // Stop A's loops so the gateway can close promptly.
    await Promise.all(spinning.map((id) => api(keyA, `/api/workflows/executions/${id}/cancel`, { method: 'POST', body: '{}' })));
  }, 60_000);

  test("A's long inline loops take turns on the event loop: B is answered while they run, and every loop's result is exact", async () => {
    // Inline steps (no sandbox): each run is a long stretch of main-thread work, shared out in slices (src/engine/turn-share.ts).
    const loop = await create(keyA, {
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        action('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.items}}' }),
        action('sq', 'Square', { actionType: 'math/aggregate', operation: 'product', values: '[{{@loop:Loop.currentItem}}, {{@loop:Loop.currentItem}}]' }),
        action('col', 'Collect', { actionType: 'Collect' }),
      ],
      edges: [
        { source: 't', target: 'loop' },
        { source: 'loop', target: 'sq' },
        { source: 'sq', target: 'col' },
      ],
    });
    const plain = await create(keyB, linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' })));
    const items = Array.from({ length: 1000 }, (_, i) => i);
    const looping = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const res = await api(keyA, `/api/workflows/${loop}/execute`, { method: 'POST', body: JSON.stringify({ input: { items } }) });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        return res.body.executionId as string;
      }),
    );

    const bRun = await start(keyB, plain);
    const bDone = await api(keyB, `/api/workflows/executions/${bRun}/wait?timeoutMs=30000`);
    const chains = await api(keyB, '/api/chains');
    const aStatuses = await Promise.all(looping.map((id) => status(keyA, id)));
    expect(bDone.body).toMatchObject({ status: 'success', output: { result: { result: 42 } } });
    expect(chains.status).toBe(200);
    expect(
      aStatuses.some((s) => s === 'running' || s === 'pending'),
      aStatuses.join(','),
    ).toBe(true);

    // Taking turns changes when each step runs, never what it computes or the order of the results.
    const squares = items.map((i) => i * i);
    for (const id of looping) {
      const done = await api(keyA, `/api/workflows/executions/${id}/wait?timeoutMs=60000`);
      expect(done.body.status, JSON.stringify(done.body).slice(0, 500)).toBe('success');
      expect(done.body.output.result).toEqual({ iterations: 1000, truncated: false });
      const logs = (await api(keyA, `/api/workflows/executions/${id}/logs`)).body.logs as { nodeId: string; output: any }[];
      const results = (logs.find((l) => l.nodeId === 'col')!.output.data.results as { result: number }[]).map((r) => r.result);
      expect(results).toEqual(squares);
    }
  }, 120_000);

  test("the sweep's batch of pending runs interleaves organizations, so a backlog cannot starve another tenant", async () => {
    const a = await orgIdentity(gw);
    const b = await orgIdentity(gw, 'tenant-b');
    const store = gw.gateway.services.store;
    const workflowA = await create(keyA, linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[1]' })));
    const workflowB = await create(keyB, linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[1]' })));
    const row = (id: string, workflowId: string, organizationId: string, createdAt: string) => ({
      id,
      workflow_id: workflowId,
      organization_id: organizationId,
      user_id: null,
      status: 'pending',
      input: '{}',
      created_at: createdAt,
      graph: '{"nodes":[],"edges":[]}',
    });
    // A's 150 pending rows are all older than B's one.
    const old = Date.parse('2020-01-01T00:00:00Z');
    await store
      .insertInto('workflow_executions')
      .values(
        Array.from({ length: 150 }, (_, i) => row(`backlog-a-${String(i).padStart(3, '0')}`, workflowA, a.organizationId, new Date(old + i).toISOString())),
      )
      .execute();
    await store
      .insertInto('workflow_executions')
      .values(row('late-b', workflowB, b.organizationId, new Date(old + 10_000).toISOString()))
      .execute();
    try {
      const { runs: batch, resumeAfter } = await pendingExecutionIds(store, 100);
      expect(batch).toHaveLength(100);
      expect(resumeAfter).toBe('');
      expect(
        batch
          .slice(0, 2)
          .map((r) => r.id)
          .sort(),
      ).toEqual(['backlog-a-000', 'late-b']);
      // More organizations waiting than a batch takes: each sweep starts after the last one seen, so none is always left out.
      const [firstOrg, secondOrg] = [a.organizationId, b.organizationId].sort();
      const one = await pendingExecutionIds(store, 1);
      expect(one.runs.map((r) => r.organizationId)).toEqual([firstOrg]);
      expect(one.resumeAfter).toBe(firstOrg);
      const two = await pendingExecutionIds(store, 1, one.resumeAfter);
      expect(two.runs.map((r) => r.organizationId)).toEqual([secondOrg]);
      const three = await pendingExecutionIds(store, 1, two.resumeAfter);
      expect(three.runs.map((r) => r.organizationId)).toEqual([firstOrg]);
    } finally {
      await store.deleteFrom('workflow_executions').where('id', 'like', 'backlog-a-%').execute();
      await store.deleteFrom('workflow_executions').where('id', '=', 'late-b').execute();
    }
  });
});
