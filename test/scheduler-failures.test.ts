import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * Every tenant's due schedules are started in one loop per scheduler tick, so
 * one schedule that fails must not hold back the others. Here two broken
 * schedules are written straight into the store, past the save-time checks:
 * an expression that never fires, and a workflow whose stored graph cannot be
 * read. Before, the second made every tick throw at the same place, and the
 * schedules after it never started. Ticks are driven by the test.
 */

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_SCHEDULER_TICK_MS: '3600000' } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

async function createEverySecond(org: string): Promise<string> {
  const res = await fetchJson(`${gw.url}/api/workflows/create`, {
    method: 'POST',
    key: await gw.createKey({ org }),
    body: JSON.stringify({
      name: `every second (${org})`,
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Tick', config: { triggerType: 'Schedule', scheduleCron: '* * * * * *', scheduleTimezone: 'UTC' } } },
        { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } },
      ],
      edges: [{ source: 't', target: 's' }],
    }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

describe('one failing schedule does not stall the others', () => {
  it("a schedule whose expression never fires and one whose graph cannot be read skip their occurrences; another tenant's schedule starts on every tick", async () => {
    const { store, engine } = gw.gateway.services;
    const [never, unreadable, healthy] = [await createEverySecond('tenant-a'), await createEverySecond('tenant-b'), await createEverySecond('tenant-c')];
    const base = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    // Due in this order, so the broken ones come first in the tick.
    await store.updateTable('workflow_schedules').set({ cron: '0 0 31 2,4,6,9,11 *', next_run_at: base }).where('workflow_id', '=', never).execute();
    await store
      .updateTable('workflow_schedules')
      .set({ next_run_at: base + 1 })
      .where('workflow_id', '=', unreadable)
      .execute();
    await store.updateTable('workflows').set({ nodes: '[{"id": "t", ' }).where('id', '=', unreadable).execute();
    await store
      .updateTable('workflow_schedules')
      .set({ next_run_at: base + 2 })
      .where('workflow_id', '=', healthy)
      .execute();

    const occurrences = async (workflowId: string) =>
      (await store.selectFrom('workflow_executions').select('scheduled_for').where('workflow_id', '=', workflowId).orderBy('scheduled_for').execute()).map(
        (r) => r.scheduled_for,
      );
    await engine.scheduler.tick(new Date(base + 500));
    await engine.scheduler.tick(new Date(base + 1500));
    await engine.scheduler.tick(new Date(base + 2500));

    // The healthy schedule started at each tick: its stored occurrence, then every second.
    expect(await occurrences(healthy)).toEqual([base + 2, base + 1000, base + 2000].map((t) => new Date(t).toISOString()));
    // The unreadable one skipped each of its occurrences (none ran) and moved on with its schedule rather than being retried.
    expect(await occurrences(unreadable)).toEqual([]);
    const moved = await store.selectFrom('workflow_schedules').select('next_run_at').where('workflow_id', '=', unreadable).executeTakeFirstOrThrow();
    expect(Number(moved.next_run_at)).toBe(base + 3000);
    // The one that never fires ran the occurrence it was stored with, then is never due again.
    expect(await occurrences(never)).toEqual([new Date(base).toISOString()]);
    const parked = await store.selectFrom('workflow_schedules').select('next_run_at').where('workflow_id', '=', never).executeTakeFirstOrThrow();
    expect(Number(parked.next_run_at)).toBe(Number.MAX_SAFE_INTEGER);
  }, 60_000);
});
