import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { action, linear } from './helpers/web3.ts';
import { createWorkflowViaApi } from './helpers/workflows.ts';

/**
 * An organization's runs may write FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES of
 * step data per UTC day (1 MiB here). Each run is bounded on its own, but one
 * tenant starting runs that each log their limit filled the shared database.
 * Past the budget a run is refused with 429 and nothing written, a scheduled
 * run is written as skipped, another organization runs on, and the next day
 * (the day moved back by the test) runs start again. Runs that end without
 * running (cancelled while they waited for a slot) are charged for the graph
 * copy and input they keep.
 */

let gw: TestGateway;
let keyB: string;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  target = await startHttpTarget();
  gw = await startTestGateway({
    env: {
      FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES: String(1024 * 1024),
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_SCHEDULER_TICK_MS: '3600000',
      // One run slot per organization, so a run that waits on a silent server keeps the next ones pending.
      FLOWGATE_ENGINE_CONCURRENCY: '2',
      FLOWGATE_ENGINE_CONCURRENCY_PER_ORG: '1',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
    },
  });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await target?.close();
});

const api = (key: string, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });

const graph = (trigger: Record<string, unknown>) => ({
  nodes: [
    { id: 't', type: 'trigger', data: { label: 'Start', config: trigger } },
    { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' } } },
  ],
  edges: [{ id: 'e', source: 't', target: 's' }],
});

const create = async (key: string, trigger: Record<string, unknown> = { triggerType: 'Manual' }) =>
  (await createWorkflowViaApi(gw.url, key, { name: 'data', ...graph(trigger) })).id;

/** A run whose trigger logs `chars` characters of input. */
const execute = (key: string, workflowId: string, chars: number) =>
  api(key, `/api/workflows/${workflowId}/execute`, { method: 'POST', body: JSON.stringify({ input: { blob: 'x'.repeat(chars) } }) });
const finished = async (key: string, executionId: string) =>
  (await api(key, `/api/workflows/executions/${executionId}/wait?timeoutMs=20000`)).body.status as string;

describe("an organization's daily run data", () => {
  it('refuses runs past the day’s budget with 429 and nothing written, skips scheduled runs, runs others, and starts again the next day', async () => {
    const store = gw.gateway.services.store;
    const workflow = await create(gw.ownerKey);
    const scheduled = await create(gw.ownerKey, { triggerType: 'Schedule', scheduleCron: '* * * * *', scheduleTimezone: 'UTC' });
    const runsOf = async (id: string) => (await store.selectFrom('workflow_executions').select('id').where('workflow_id', '=', id).execute()).length;

    // Runs that each log about 600,000 characters (the trigger logs its input and its output) until the budget
    // is spent: the run that crosses it still finishes, the next one is refused.
    let finishedRuns = 0;
    let refused = await execute(gw.ownerKey, workflow, 300_000);
    while (refused.status === 200) {
      expect(await finished(gw.ownerKey, refused.body.executionId)).toBe('success');
      finishedRuns++;
      expect(finishedRuns).toBeLessThan(10);
      refused = await execute(gw.ownerKey, workflow, 300_000);
    }
    expect(finishedRuns).toBe(2);
    const organizationId = (await api(gw.ownerKey, '/api/keys')).body.organization.id;
    const [today] = await store.selectFrom('organization_run_data').select(['day', 'chars']).where('organization_id', '=', organizationId).execute();
    expect(today!.day).toBe(new Date().toISOString().slice(0, 10));
    expect(Number(today!.chars)).toBeGreaterThanOrEqual(1024 * 1024);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', limit: 1024 * 1024 });
    expect(refused.body.error).toContain('(FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES); runs start again at 00:00 UTC');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(refused.body.retryAfterSeconds).toBe(retryAfter);
    expect(await runsOf(workflow)).toBe(2);

    // A scheduled occurrence is written as skipped, saying why.
    await store
      .updateTable('workflow_schedules')
      .set({ next_run_at: Date.now() - 60_000 })
      .where('workflow_id', '=', scheduled)
      .execute();
    const [skippedId] = await gw.gateway.services.engine.scheduler.tick();
    const skipped = await api(gw.ownerKey, `/api/workflows/executions/${skippedId}/status`);
    expect(skipped.body.status).toBe('error');
    const [skippedRun] = (await api(gw.ownerKey, `/api/workflows/${scheduled}/executions`)).body;
    expect(skippedRun.error).toContain("Skipped: this organization's runs had written their day's budget");
    // A skipped run keeps no copy of the graph (it never runs), so skipped occurrences do not pile up data either;
    // its status (with progress), logs and details still answer.
    const kept = await store.selectFrom('workflow_executions').select('graph').where('id', '=', skippedId!).executeTakeFirstOrThrow();
    expect(kept.graph).toBeNull();
    const skippedLogs = await api(gw.ownerKey, `/api/workflows/executions/${skippedId}/logs`);
    expect(skippedLogs.status).toBe(200);
    const details = await api(gw.ownerKey, `/api/workflows/executions/${skippedId}/details`);
    expect(details.status, JSON.stringify(details.body)).toBe(200);

    // Another organization is not held back.
    const other = await execute(keyB, await create(keyB), 1_000);
    expect(other.status).toBe(200);
    expect(await finished(keyB, other.body.executionId)).toBe('success');

    // The next day: today's sum becomes yesterday's, and runs start again.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await store.updateTable('organization_run_data').set({ day: yesterday }).where('organization_id', '=', organizationId).execute();
    const again = await execute(gw.ownerKey, workflow, 10);
    expect(again.status).toBe(200);
    expect(await finished(gw.ownerKey, again.body.executionId)).toBe('success');
  }, 60_000);

  it('counts the copy of the graph each run keeps: a large graph whose steps log little spends the budget too', async () => {
    const keyC = await gw.createKey({ org: 'tenant-c' });
    // About 240,000 characters of graph (a field of the trigger's config, under a node config's 256 KiB, that no step
    // logs); the runs take no input.
    const large = graph({ triggerType: 'Manual', note: 'n'.repeat(240_000) });
    const { id } = await createWorkflowViaApi(gw.url, keyC, { name: 'large graph', ...large });
    let finishedRuns = 0;
    let started = await api(keyC, `/api/workflows/${id}/execute`, { method: 'POST', body: '{}' });
    while (started.status === 200) {
      expect(await finished(keyC, started.body.executionId)).toBe('success');
      finishedRuns++;
      expect(finishedRuns).toBeLessThan(10);
      started = await api(keyC, `/api/workflows/${id}/execute`, { method: 'POST', body: '{}' });
    }
    // About 240,000 a run: the fifth crosses 1 MiB (1,048,576), the sixth is refused.
    expect(finishedRuns).toBe(5);
    expect(started.status).toBe(429);
    expect(started.body.code).toBe('rate_limited');
  }, 60_000);

  it('charges runs cancelled while they waited for a slot: starting and cancelling queued runs spends the budget until starts are refused', async () => {
    const keyE = await gw.createKey({ org: 'tenant-e' });
    const store = gw.gateway.services.store;
    // The organization's one slot is held by a run waiting on a server that never answers.
    const { id: silent } = await createWorkflowViaApi(gw.url, keyE, {
      name: 'silent',
      ...linear(action('h', 'Hang', { actionType: 'HTTP Request', endpoint: `${target.url}/hang`, httpMethod: 'GET', timeout: 30000 })),
    });
    const holding = await api(keyE, `/api/workflows/${silent}/execute`, { method: 'POST', body: '{}' });
    expect(holding.status).toBe(200);
    // About 240,000 characters of graph and 100,000 of input per run, none of which a step ever logs.
    const { id: large } = await createWorkflowViaApi(gw.url, keyE, { name: 'large graph', ...graph({ triggerType: 'Manual', note: 'n'.repeat(240_000) }) });

    const cancelled: string[] = [];
    let started = await execute(keyE, large, 100_000);
    while (started.status === 200) {
      const cancel = await api(keyE, `/api/workflows/executions/${started.body.executionId}/cancel`, { method: 'POST', body: '{}' });
      // Cancelled at once: it was still waiting for the slot, and never ran.
      expect(cancel.body).toMatchObject({ status: 'cancelled', cancelRequested: true });
      cancelled.push(started.body.executionId);
      expect(cancelled.length).toBeLessThan(10);
      started = await execute(keyE, large, 100_000);
    }
    // About 340,000 characters a run: the fourth crosses 1 MiB, the fifth start is refused.
    expect(cancelled).toHaveLength(4);
    expect(started.status).toBe(429);
    expect(started.body).toMatchObject({ code: 'rate_limited', limit: 1024 * 1024 });
    expect(started.body.error).toContain('FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES');

    // The day's usage is exactly what the cancelled runs keep (the holding run has not ended, so it is not counted yet).
    const kept = await store.selectFrom('workflow_executions').select(['graph', 'input', 'status']).where('id', 'in', cancelled).execute();
    expect(kept.map((r) => r.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
    const keptChars = kept.reduce((sum, r) => sum + r.graph!.length + r.input!.length, 0);
    const usage = await api(keyE, '/api/organization/usage');
    expect(usage.status).toBe(200);
    expect(usage.body.runData).toMatchObject({ used: keptChars, limit: 1024 * 1024, variable: 'FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES' });
    expect(usage.body.runData.used).toBeGreaterThanOrEqual(1024 * 1024);

    // The holding run ends once its server goes away, and is charged like any run.
    await target.close();
    expect(['cancelled', 'error']).toContain(await finished(keyE, holding.body.executionId));
  }, 60_000);
});
