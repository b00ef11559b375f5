import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { action, linear } from './helpers/web3.ts';

/**
 * An organization's runs waiting for a slot are bounded
 * (FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG): past its share of slots a tenant's
 * runs queue, and one starting slow runs in a loop grew that queue without end.
 * Here an organization holds its one slot with a slow run and queues three
 * more; the next is refused with 429 and nothing written, another
 * organization's run still runs, and once the queue drains the first can start
 * runs again.
 */

let gw: TestGateway;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let keyB: string;

beforeAll(async () => {
  target = await startHttpTarget();
  gw = await startTestGateway({
    env: {
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_ENGINE_CONCURRENCY: '2',
      FLOWGATE_ENGINE_CONCURRENCY_PER_ORG: '1',
      FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG: '3',
    },
  });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  target?.close();
});

const api = (key: string, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });

async function create(key: string, graph: { nodes: unknown[]; edges: unknown[] }): Promise<string> {
  const res = await api(key, '/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'queue', ...graph }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const execute = (key: string, workflowId: string, input: Record<string, unknown> = {}) =>
  api(key, `/api/workflows/${workflowId}/execute`, { method: 'POST', body: JSON.stringify({ input }) });

describe("an organization's queue of waiting runs", () => {
  it('refuses the run past the bound with 429 and writes nothing, while another organization runs and the first starts again once its queue drains', async () => {
    const slow = await create(
      gw.ownerKey,
      linear(action('wait', 'Wait', { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms={{@t:Start.ms}}`, httpMethod: 'GET' })),
    );
    const quick = await create(keyB, linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' })));
    const runsOf = async (workflowId: string) =>
      (await gw.gateway.services.store.selectFrom('workflow_executions').select('id').where('workflow_id', '=', workflowId).execute()).length;

    // One run holds the organization's one slot for 3 s; three more wait.
    const holding = await execute(gw.ownerKey, slow, { ms: 3000 });
    expect(holding.status).toBe(200);
    const queued = [];
    for (let i = 0; i < 3; i++) queued.push(await execute(gw.ownerKey, slow, { ms: 1 }));
    expect(queued.map((r) => r.status)).toEqual([200, 200, 200]);
    for (const r of queued) expect((await api(gw.ownerKey, `/api/workflows/executions/${r.body.executionId}/status`)).body.status).toBe('pending');

    const refused = await execute(gw.ownerKey, slow, { ms: 1 });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', limit: 3, retryAfterSeconds: 5 });
    expect(refused.body.error).toContain('already has 3 runs waiting for a slot (FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG)');
    expect(refused.headers.get('retry-after')).toBe('5');
    // The same bound over MCP (execute_workflow), which starts runs through the same path.
    const overMcp = await fetchJson(`${gw.url}/mcp`, {
      method: 'POST',
      key: gw.ownerKey,
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'execute_workflow', arguments: { workflowId: slow, input: { ms: 1 } } },
      }),
    });
    expect(overMcp.body.result.isError).toBe(true);
    expect(JSON.parse(overMcp.body.result.content[0].text)).toMatchObject({ code: 'rate_limited', limit: 3, retryAfterSeconds: 5 });
    expect(await runsOf(slow)).toBe(4);

    // Another organization's run is not held up by the first one's queue.
    const other = await execute(keyB, quick);
    expect(other.status).toBe(200);
    expect((await api(keyB, `/api/workflows/executions/${other.body.executionId}/wait?timeoutMs=10000`)).body.status).toBe('success');

    // Once the first organization's runs have run, it may queue again.
    for (const r of [holding, ...queued]) {
      expect((await api(gw.ownerKey, `/api/workflows/executions/${r.body.executionId}/wait?timeoutMs=20000`)).body.status).toBe('success');
    }
    expect((await execute(gw.ownerKey, slow, { ms: 1 })).status).toBe(200);
  }, 60_000);
});

describe('the bound with a larger queue, where runs are let through on a recent count', () => {
  it('still refuses exactly the run past the bound, and sees waiting runs written by another instance at its next count', async () => {
    const wide = await startTestGateway({
      env: {
        FLOWGATE_RATE_LIMITS: 'off',
        FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
        FLOWGATE_ENGINE_CONCURRENCY: '2',
        FLOWGATE_ENGINE_CONCURRENCY_PER_ORG: '1',
        FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG: '8',
      },
    });
    try {
      // A slow workflow of the organization `key` belongs to, and a starter of its runs (each waits `ms`).
      const slowStarter = async (key: string) => {
        const created = await fetchJson(`${wide.url}/api/workflows/create`, {
          key,
          method: 'POST',
          body: JSON.stringify({
            name: 'queue',
            ...linear(action('wait', 'Wait', { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms={{@t:Start.ms}}`, httpMethod: 'GET' })),
          }),
        });
        expect(created.status).toBe(200);
        const id: string = created.body.id;
        return {
          id,
          start: (ms: number) => fetchJson(`${wide.url}/api/workflows/${id}/execute`, { key, method: 'POST', body: JSON.stringify({ input: { ms } }) }),
        };
      };
      const { id: workflowId, start } = await slowStarter(wide.ownerKey);
      const { store } = wide.gateway.services;
      const pending = async () =>
        (await store.selectFrom('workflow_executions').select('id').where('workflow_id', '=', workflowId).where('status', '=', 'pending').execute()).length;

      expect((await start(4000)).status).toBe(200);
      // The first few waiting runs are let through on the first count (under half of 8); the bound is still exact.
      for (let i = 0; i < 8; i++) expect((await start(1)).status).toBe(200);
      expect(await pending()).toBe(8);
      const refused = await start(1);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ code: 'rate_limited', limit: 8 });
      expect(await pending()).toBe(8);

      // Another organization: one waiting run of its own, then seven more written straight into the database, as
      // another instance on it would. Within the second they may be missed; at the next count they are not.
      const { start: startOther } = await slowStarter(await wide.createKey({ org: 'tenant-c' }));
      expect((await startOther(4000)).status).toBe(200);
      const waiting = await startOther(1);
      expect(waiting.status).toBe(200);
      const row = await store.selectFrom('workflow_executions').selectAll().where('id', '=', waiting.body.executionId).executeTakeFirstOrThrow();
      expect(row.status).toBe('pending');
      for (let i = 0; i < 7; i++)
        await store
          .insertInto('workflow_executions')
          .values({ ...row, id: `${row.id}-elsewhere-${i}` })
          .execute();
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const past = await startOther(1);
      expect(past.status).toBe(429);
      expect(past.body).toMatchObject({ code: 'rate_limited', limit: 8 });
    } finally {
      await wide.close();
    }
  }, 60_000);
});
