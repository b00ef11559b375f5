import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIST_DATA_CHARS } from '../src/engine/executions.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * A workflow's run list (up to 100, newest first) carries each run's input and
 * output, each up to a request body or its run data (16 MiB). The list stops
 * once they pass LIST_DATA_CHARS in all, so one request cannot read gigabytes
 * into the process every tenant shares; it always holds the newest run, and
 * each run's own record still answers whole. The large outputs are written
 * into the stored runs directly (a run that logs 16 MiB takes a while to say
 * the same).
 */

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetchJson(`${gw.url}${path}`, { key: gw.ownerKey, method: init.method ?? 'GET', ...(init.body ? { body: JSON.stringify(init.body) } : {}) });

describe('the run list of a workflow', () => {
  it('ends early once its runs’ inputs and outputs pass the bound, newest first, always with the newest run', async () => {
    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: { name: 'Runs', nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }], edges: [] },
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: { input: { i } } });
      expect((await api(`/api/workflows/executions/${started.body.executionId}/wait`)).body.status).toBe('success');
      ids.push(started.body.executionId);
    }
    expect((await api(`/api/workflows/${created.body.id}/executions`)).body).toHaveLength(5);

    // The three newest hold a third of the bound each (plus a little): the list holds two of them.
    const third = JSON.stringify({ blob: 'x'.repeat(Math.ceil(LIST_DATA_CHARS / 3)) });
    for (const id of ids.slice(2)) await gw.gateway.services.store.updateTable('workflow_executions').set({ output: third }).where('id', '=', id).execute();
    const list = await api(`/api/workflows/${created.body.id}/executions`);
    expect(list.status).toBe(200);
    expect(list.body.map((r: { id: string }) => r.id)).toEqual([ids[4], ids[3]]);

    // One run alone over the bound is still listed, alone.
    const whole = JSON.stringify({ blob: 'x'.repeat(LIST_DATA_CHARS + 10) });
    await gw.gateway.services.store.updateTable('workflow_executions').set({ output: whole }).where('id', '=', ids[4]!).execute();
    expect((await api(`/api/workflows/${created.body.id}/executions`)).body.map((r: { id: string }) => r.id)).toEqual([ids[4]]);
    // Its own record answers whole, as do the older runs the list left out.
    expect((await api(`/api/workflows/executions/${ids[4]}/logs`)).body.execution.output.blob).toHaveLength(LIST_DATA_CHARS + 10);
    expect((await api(`/api/workflows/executions/${ids[0]}/logs`)).body.execution.status).toBe('success');
  }, 60_000);
});
