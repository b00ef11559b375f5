import { afterAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { createWorkflowViaApi } from './helpers/workflows.ts';

/**
 * Finished runs keep their data (step logs, input, output, the copy of the
 * graph) for FLOWGATE_RUN_DATA_RETENTION_DAYS (1 here), then lose it while
 * their record stays: status, times, transactions, and the analytics totals.
 * Without it the database every tenant shares grew for as long as the gateway
 * ran. The prune runs with the worker's hourly sweep, the first one at start,
 * so the test ages two runs by two days and starts the gateway again.
 */

const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const gw of gateways) await gw.close().catch(() => {});
});

const graph = {
  nodes: [
    { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
    { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' } } },
  ],
  edges: [{ id: 'e', source: 't', target: 's' }],
};

describe('run data retention', () => {
  it('removes the data of runs older than the retention at the next sweep, keeps their records and the analytics totals, and leaves recent runs whole', async () => {
    const first = await startTestGateway({ env: { FLOWGATE_RUN_DATA_RETENTION_DAYS: '1', FLOWGATE_RATE_LIMITS: 'off' } });
    gateways.push(first);
    const keyB = await first.createKey({ org: 'tenant-b' });
    const api = (gw: TestGateway, key: string, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });
    const runOnce = async (key: string, workflowId: string) => {
      const started = await api(first, key, `/api/workflows/${workflowId}/execute`, {
        method: 'POST',
        body: JSON.stringify({ input: { note: 'kept a day' } }),
      });
      expect(started.status).toBe(200);
      const { executionId } = started.body;
      expect((await api(first, key, `/api/workflows/executions/${executionId}/wait?timeoutMs=20000`)).body.status).toBe('success');
      return executionId as string;
    };
    const workflowA = (await createWorkflowViaApi(first.url, first.ownerKey, { name: 'kept', ...graph })).id;
    const workflowB = (await createWorkflowViaApi(first.url, keyB, { name: 'other tenant', ...graph })).id;
    const oldA = await runOnce(first.ownerKey, workflowA);
    const recentA = await runOnce(first.ownerKey, workflowA);
    const oldB = await runOnce(keyB, workflowB);

    // Two days pass for two of the runs.
    const store = first.gateway.services.store;
    const twoDaysAgo = (iso: string | null) => (iso ? new Date(Date.parse(iso) - 2 * 86_400_000).toISOString() : null);
    for (const id of [oldA, oldB]) {
      const row = await store
        .selectFrom('workflow_executions')
        .select(['created_at', 'started_at', 'completed_at'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      await store
        .updateTable('workflow_executions')
        .set({ created_at: twoDaysAgo(row.created_at)!, started_at: twoDaysAgo(row.started_at), completed_at: twoDaysAgo(row.completed_at) })
        .where('id', '=', id)
        .execute();
    }
    const summaryBefore = (await api(first, first.ownerKey, '/api/analytics/summary?range=7d')).body;
    expect((await api(first, first.ownerKey, `/api/workflows/executions/${oldA}/logs`)).body.logs.length).toBeGreaterThan(0);
    await first.close();

    // The next start sweeps: the old runs' data goes (in the background), the recent run keeps its own.
    const second = await startTestGateway({ dataDir: first.dataDir, env: { FLOWGATE_RUN_DATA_RETENTION_DAYS: '1', FLOWGATE_RATE_LIMITS: 'off' } });
    gateways.push(second);
    const logsOf = (key: string, id: string) => api(second, key, `/api/workflows/executions/${id}/logs`);
    const deadline = Date.now() + 15_000;
    while (!(await logsOf(second.ownerKey, oldA)).body.execution.dataPrunedAt) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const pruned = (await logsOf(second.ownerKey, oldA)).body;
    expect(pruned.logs).toEqual([]);
    expect(pruned.execution).toMatchObject({ status: 'success', input: {}, output: null, workflowId: workflowA });
    expect(Date.parse(pruned.execution.dataPrunedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(pruned.execution.completedAt).not.toBeNull();
    const status = await api(second, second.ownerKey, `/api/workflows/executions/${oldA}/status`);
    expect(status.status).toBe(200);
    expect(status.body.status).toBe('success');
    const details = await api(second, second.ownerKey, `/api/workflows/executions/${oldA}/details`);
    expect(details.status).toBe(200);
    expect(details.body.logs).toEqual([]);

    // Every organization's runs age alike: tenant B's old run is pruned too.
    expect((await logsOf(keyB, oldB)).body.execution.dataPrunedAt).toEqual(expect.any(String));

    // The recent run is whole.
    const recent = (await logsOf(second.ownerKey, recentA)).body;
    expect(recent.execution.dataPrunedAt).toBeUndefined();
    expect(recent.execution.input).toEqual({ note: 'kept a day' });
    expect(recent.logs.map((l: { nodeId: string }) => l.nodeId).sort()).toEqual(['s', 't']);

    // The history still lists both runs, and the totals did not move.
    const history = (await api(second, second.ownerKey, `/api/workflows/${workflowA}/executions`)).body as { id: string }[];
    expect(history.map((r) => r.id).sort()).toEqual([oldA, recentA].sort());
    const summaryAfter = (await api(second, second.ownerKey, '/api/analytics/summary?range=7d')).body;
    expect(summaryAfter).toEqual(summaryBefore);
  }, 90_000);
});
