import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { refuseRunInserts } from './helpers/store-faults.ts';

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

describe('skipped occurrences and the day bound on them, across instances', () => {
  it('an occurrence another process already wrote gives back the skipped-run slot this one took, so N instances do not fill the bound N times faster', async () => {
    const { store, engine } = gw.gateway.services;
    const workflowId = await createEverySecond('tenant-d');
    const { organization_id: organizationId } = await store
      .selectFrom('workflows')
      .select('organization_id')
      .where('id', '=', workflowId)
      .executeTakeFirstOrThrow();
    // The organization's day of run data is spent: its triggered occurrences are written as skipped runs.
    const day = new Date().toISOString().slice(0, 10);
    await store
      .insertInto('organization_run_data')
      .values({ organization_id: organizationId!, day, chars: 10 ** 12, skipped_runs: 0 })
      .onConflict((oc) => oc.columns(['organization_id', 'day']).doUpdateSet({ chars: 10 ** 12 }))
      .execute();
    const base = Math.floor(Date.now() / 1000) * 1000 - 30_000;
    const due = () => store.updateTable('workflow_schedules').set({ next_run_at: base }).where('workflow_id', '=', workflowId).execute();
    const skippedToday = async () =>
      Number(
        (
          await store
            .selectFrom('organization_run_data')
            .select('skipped_runs')
            .where('organization_id', '=', organizationId)
            .where('day', '=', day)
            .executeTakeFirstOrThrow()
        ).skipped_runs,
      );
    await due();
    await engine.scheduler.tick(new Date(base + 500));
    expect(await skippedToday()).toBe(1);
    // A second instance takes the same occurrence (here: the same tick again); the first already wrote it.
    await due();
    await engine.scheduler.tick(new Date(base + 500));
    const rows = await store.selectFrom('workflow_executions').select(['status', 'scheduled_for']).where('workflow_id', '=', workflowId).execute();
    expect(rows).toEqual([{ status: 'error', scheduled_for: new Date(base).toISOString() }]);
    expect(await skippedToday()).toBe(1);
  }, 60_000);
});

describe('an occurrence the database refuses for a moment', () => {
  it('stays due and starts at the next tick, rather than being skipped', async () => {
    const { store, engine } = gw.gateway.services;
    const workflowId = await createEverySecond('tenant-e');
    const base = Math.floor(Date.now() / 1000) * 1000 - 20_000;
    await store.updateTable('workflow_schedules').set({ next_run_at: base }).where('workflow_id', '=', workflowId).execute();
    const undo = await refuseRunInserts(store);
    try {
      await engine.scheduler.tick(new Date(base + 500));
    } finally {
      await undo();
    }
    const schedule = await store.selectFrom('workflow_schedules').select('next_run_at').where('workflow_id', '=', workflowId).executeTakeFirstOrThrow();
    expect(Number(schedule.next_run_at)).toBe(base);
    await engine.scheduler.tick(new Date(base + 600));
    const runs = await store.selectFrom('workflow_executions').select('scheduled_for').where('workflow_id', '=', workflowId).execute();
    expect(runs.map((r) => r.scheduled_for)).toEqual([new Date(base).toISOString()]);
  }, 60_000);
});
