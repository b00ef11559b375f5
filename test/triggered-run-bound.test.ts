import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { action, linear } from './helpers/web3.ts';
import { createWorkflowViaApi } from './helpers/workflows.ts';

/**
 * The bound on an organization's waiting runs (FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG)
 * holds for runs nobody asked for over HTTP too. A schedule or a chain trigger
 * has no caller to refuse, so before, a tenant's schedules or a Block trigger
 * kept queueing behind its slow runs without end. Past the bound such an
 * occurrence is written as a run that ended at once, saying why; another
 * organization's triggers still run, and once the queue has drained the same
 * triggers run again. Scheduler ticks and chain polls are driven by the test.
 */

let chain: TestChain;
let gw: TestGateway;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let keyB: string;
/** Skipped runs an organization's day may hold here (the first test writes four of A's). */
const SKIPPED_PER_DAY = 5;

beforeAll(async () => {
  [chain, target] = await Promise.all([startTestChain(31337), startHttpTarget()]);
  gw = await startTestGateway({
    env: {
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_ENGINE_CONCURRENCY: '2',
      FLOWGATE_ENGINE_CONCURRENCY_PER_ORG: '1',
      FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG: '2',
      FLOWGATE_SCHEDULER_TICK_MS: '3600000',
      FLOWGATE_CHAIN_TRIGGER_POLL_MS: '3600000',
      FLOWGATE_MAX_SKIPPED_RUNS_PER_ORG_PER_DAY: String(SKIPPED_PER_DAY),
      FLOWGATE_RPC_URL_31337: chain.url,
    },
  });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
  target?.close();
});

const api = (key: string, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });

const create = async (key: string, graph: { nodes: unknown[]; edges: unknown[] }) =>
  (await createWorkflowViaApi(gw.url, key, { name: 'triggered', ...graph })).id;

const triggered = (config: Record<string, unknown>) => ({
  nodes: [
    { id: 't', type: 'trigger', data: { label: 'Trigger', config } },
    { id: 'sum', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' } } },
  ],
  edges: [{ id: 'e1', source: 't', target: 'sum' }],
});
const everyMinute = { triggerType: 'Schedule', scheduleCron: '* * * * *', scheduleTimezone: 'UTC' };
const everyBlock = { triggerType: 'Block', network: '31337', blockInterval: 1 };

interface Run {
  id: string;
  status: string;
  error: string | null;
  triggerType: string;
}
const runsOf = async (key: string, workflowId: string): Promise<Run[]> => (await api(key, `/api/workflows/${workflowId}/executions`)).body;
const waitFor = async (key: string, executionId: string) => (await api(key, `/api/workflows/executions/${executionId}/wait?timeoutMs=20000`)).body;

/** Makes the workflow's schedule due a minute ago, so the next tick starts one occurrence of it. */
async function dueNow(workflowId: string, at: number) {
  await gw.gateway.services.store.updateTable('workflow_schedules').set({ next_run_at: at }).where('workflow_id', '=', workflowId).execute();
}

describe('triggered runs and the bound on waiting runs', () => {
  it('writes a schedule or chain occurrence past the bound as a skipped run, runs other tenants’ triggers, and runs again once the queue drains', async () => {
    const { scheduler, chainTriggers } = gw.gateway.services.engine;
    const slow = await create(
      gw.ownerKey,
      linear(action('wait', 'Wait', { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms={{@t:Start.ms}}`, httpMethod: 'GET' })),
    );
    const scheduledA = await create(gw.ownerKey, triggered(everyMinute));
    const blocksA = await create(gw.ownerKey, triggered(everyBlock));
    const scheduledB = await create(keyB, triggered(everyMinute));
    await chainTriggers.tick(); // the Block trigger's cursor starts at the head

    // Organization A holds its one slot for a few seconds and has its two waiting runs.
    const holding = await api(gw.ownerKey, `/api/workflows/${slow}/execute`, { method: 'POST', body: JSON.stringify({ input: { ms: 4000 } }) });
    const queued = [];
    for (let i = 0; i < 2; i++)
      queued.push(await api(gw.ownerKey, `/api/workflows/${slow}/execute`, { method: 'POST', body: JSON.stringify({ input: { ms: 1 } }) }));
    expect([holding, ...queued].map((r) => r.status)).toEqual([200, 200, 200]);

    // A schedule tick: A's occurrence is written as skipped, B's runs.
    const minuteAgo = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
    await dueNow(scheduledA, minuteAgo);
    await dueNow(scheduledB, minuteAgo);
    const ticked = await scheduler.tick();
    expect(ticked).toHaveLength(2);
    const [skippedSchedule] = await runsOf(gw.ownerKey, scheduledA);
    expect(skippedSchedule).toMatchObject({ status: 'error', triggerType: 'Schedule' });
    expect(skippedSchedule.error).toContain('Skipped: this organization already had 2 runs waiting for a slot (FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG)');
    const status = await api(gw.ownerKey, `/api/workflows/executions/${skippedSchedule.id}/status`);
    expect(status.body.status).toBe('error');
    const [runB] = await runsOf(keyB, scheduledB);
    expect((await waitFor(keyB, runB.id)).status).toBe('success');
    // The skipped occurrence is not tried again: the schedule moved on.
    const schedule = await gw.gateway.services.store
      .selectFrom('workflow_schedules')
      .select('next_run_at')
      .where('workflow_id', '=', scheduledA)
      .executeTakeFirstOrThrow();
    expect(schedule.next_run_at).toBeGreaterThan(minuteAgo);
    expect(await scheduler.tick()).toEqual([]);

    // Three new blocks: each is written as a skipped Block run of A; A's queue holds its two waiting runs still.
    await chain.testClient.mine({ blocks: 3 });
    expect(await chainTriggers.tick()).toHaveLength(3);
    const skippedBlocks = await runsOf(gw.ownerKey, blocksA);
    expect(skippedBlocks.map((r) => [r.status, r.triggerType])).toEqual([
      ['error', 'Block'],
      ['error', 'Block'],
      ['error', 'Block'],
    ]);
    expect(skippedBlocks[0].error).toContain('Skipped:');
    const waiting = await gw.gateway.services.store
      .selectFrom('workflow_executions')
      .select('id')
      .where('organization_id', '=', (await api(gw.ownerKey, '/api/keys')).body.organization.id)
      .where('status', '=', 'pending')
      .execute();
    expect(waiting.length).toBeLessThanOrEqual(2);

    // Once A's runs have finished, its triggers run again.
    for (const r of [holding, ...queued]) expect((await waitFor(gw.ownerKey, r.body.executionId)).status).toBe('success');
    await dueNow(scheduledA, minuteAgo + 60_000);
    const [scheduledRun] = await scheduler.tick();
    expect((await waitFor(gw.ownerKey, scheduledRun)).status).toBe('success');
    await chain.testClient.mine({ blocks: 1 });
    const [blockRun] = await chainTriggers.tick();
    expect((await waitFor(gw.ownerKey, blockRun)).status).toBe('success');
    expect((await runsOf(gw.ownerKey, blocksA)).filter((r) => r.status === 'success')).toHaveLength(1);
  }, 90_000);

  it('an organization whose triggers keep being skipped writes at most its day’s bound of skipped runs; later occurrences leave no row, and other tenants are unaffected', async () => {
    const { chainTriggers } = gw.gateway.services.engine;
    const keyC = await gw.createKey({ org: 'tenant-c' });
    const slow = await create(
      keyC,
      linear(action('wait', 'Wait', { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms={{@t:Start.ms}}`, httpMethod: 'GET' })),
    );
    const blocksC = await create(keyC, triggered(everyBlock));
    const blocksB = await create(keyB, triggered(everyBlock));
    await chainTriggers.tick(); // the cursors start at the head
    const started = [];
    for (const ms of [3000, 1, 1]) started.push(await api(keyC, `/api/workflows/${slow}/execute`, { method: 'POST', body: JSON.stringify({ input: { ms } }) }));
    expect(started.map((r) => r.status)).toEqual([200, 200, 200]);

    // C's queue is full for eight blocks: five skipped runs are written (its bound), the other three leave nothing.
    await chain.testClient.mine({ blocks: 8 });
    await chainTriggers.tick();
    const skipped = await runsOf(keyC, blocksC);
    expect(skipped).toHaveLength(SKIPPED_PER_DAY);
    expect(skipped.every((r) => r.status === 'error' && r.error?.startsWith('Skipped:'))).toBe(true);
    expect((await api(keyC, '/api/organization/usage')).body.skippedRuns).toEqual({
      used: SKIPPED_PER_DAY,
      limit: SKIPPED_PER_DAY,
      variable: 'FLOWGATE_MAX_SKIPPED_RUNS_PER_ORG_PER_DAY',
    });
    // The cursor moved past all eight: polling again writes nothing more.
    await chainTriggers.tick();
    expect(await runsOf(keyC, blocksC)).toHaveLength(SKIPPED_PER_DAY);
    // B's Block trigger ran for every one of the eight blocks.
    const ranB = await runsOf(keyB, blocksB);
    expect(ranB).toHaveLength(8);
    for (const r of ranB) expect((await waitFor(keyB, r.id)).status).toBe('success');

    // Once C's queue drains its triggers run again (the bound is on skipped runs, not on runs).
    for (const r of started) expect((await waitFor(keyC, r.body.executionId)).status).toBe('success');
    await chain.testClient.mine({ blocks: 1 });
    await chainTriggers.tick();
    const after = await runsOf(keyC, blocksC);
    expect(after).toHaveLength(SKIPPED_PER_DAY + 1);
    expect((await waitFor(keyC, after[0]!.id)).status).toBe('success');
  }, 90_000);
});
