import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * A scheduler tick is shared between organizations: a tenant with a backlog of
 * due schedules (150 here, more than one tick starts) cannot hold back another
 * tenant's schedule that came due after all of them. Before, a tick took the
 * 100 earliest due schedules of all tenants, so B's waited for A's backlog.
 */

let gw: TestGateway;
let keyB: string;

beforeAll(async () => {
  // Ticks are driven by the test (scheduler.tick), not the timer.
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_SCHEDULER_TICK_MS: '3600000' } });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const everySecond = (name: string) =>
  JSON.stringify({
    name,
    nodes: [
      { id: 't', type: 'trigger', data: { label: 'Tick', config: { triggerType: 'Schedule', scheduleCron: '* * * * * *', scheduleTimezone: 'UTC' } } },
      { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } },
    ],
    edges: [{ source: 't', target: 's' }],
  });

async function createScheduled(key: string, name: string): Promise<string> {
  const res = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key, body: everySecond(name) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

describe('scheduler ticks shared between organizations', () => {
  it("starts B's due schedule in the first tick though 150 of A's came due before it, and still starts each of A's once", async () => {
    const store = gw.gateway.services.store;
    const aWorkflows: string[] = [];
    for (let batch = 0; batch < 15; batch++) {
      aWorkflows.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => createScheduled(gw.ownerKey, `A ${batch * 10 + i}`)))));
    }
    const bWorkflow = await createScheduled(keyB, 'B');

    // A's 150 occurrences fall due over the first 150 ms of a minute ago, B's one at its second second.
    const base = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    for (const [i, id] of aWorkflows.entries()) {
      await store
        .updateTable('workflow_schedules')
        .set({ next_run_at: base + i })
        .where('workflow_id', '=', id)
        .execute();
    }
    await store
      .updateTable('workflow_schedules')
      .set({ next_run_at: base + 1000 })
      .where('workflow_id', '=', bWorkflow)
      .execute();

    const occurrencesOf = async (ids: string[]) =>
      (await store.selectFrom('workflow_executions').select(['workflow_id', 'scheduled_for']).where('workflow_id', 'in', ids).execute()).map(
        (r) => `${r.workflow_id} ${r.scheduled_for}`,
      );
    const scheduler = gw.gateway.services.engine.scheduler;
    const at = new Date(base + 1500);

    const first = await scheduler.tick(at);
    expect(await occurrencesOf([bWorkflow])).toEqual([`${bWorkflow} ${new Date(base + 1000).toISOString()}`]);
    // A tick still starts no more than its batch, and A got a share of it.
    expect(first.length).toBeLessThanOrEqual(100);
    expect((await occurrencesOf(aWorkflows)).length).toBe(first.length - 1);

    // The next ticks work through A's backlog: each of its occurrences starts once, and B's does not start again.
    for (let tick = 0; tick < 5; tick++) await scheduler.tick(at);
    const aRuns = await occurrencesOf(aWorkflows);
    expect(aRuns).toHaveLength(150);
    expect(new Set(aRuns).size).toBe(150);
    expect(aRuns.sort()).toEqual(aWorkflows.map((id, i) => `${id} ${new Date(base + i).toISOString()}`).sort());
    expect(await occurrencesOf([bWorkflow])).toHaveLength(1);
  }, 120_000);
});
