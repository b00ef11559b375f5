import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { balanceGraph, createWorkflowViaApi } from './helpers/workflows.ts';

/**
 * Search reads what a public workflow's graph says (its chains, read or
 * write, whether it runs here) once per version of the graph, not on every
 * request (src/engine/public-search.ts). These cases pin that an answer always
 * follows the workflow as it is now: a changed graph, name, visibility or a
 * deletion shows in the next search, though the one before had read it.
 */

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_MAX_PUBLIC_WORKFLOWS_PER_ORG: '1000' } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const api = (path: string, method = 'GET', body?: unknown) =>
  fetchJson(`${gw.url}${path}`, { method, key: gw.ownerKey, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
/** Anonymous, as agents search. */
const search = async (query: string) => {
  const found = await fetchJson(`${gw.url}/api/workflows/search?${query}`);
  expect(found.status).toBe(200);
  return found.body.results as { id: string; name: string; chainIds: number[]; workflowType: string }[];
};
/** Writes carry a millisecond timestamp, which is what tells search a graph changed; keep two writes apart. */
const nextMillisecond = () => new Promise((resolve) => setTimeout(resolve, 2));

describe('search_workflows', () => {
  it('follows a public workflow through a graph change, a rename, going private and deletion', async () => {
    const wf = await createWorkflowViaApi(gw.url, gw.ownerKey, { name: 'Draft' });
    expect((await api(`/api/workflows/${wf.id}/go-live`, 'PUT', { name: 'Searchable balance' })).status).toBe(200);
    const onBase = await search('query=searchable&chain=base');
    expect(onBase.map((r) => r.id)).toEqual([wf.id]);
    expect(onBase[0]).toMatchObject({ chainIds: [8453], workflowType: 'read' });
    expect(await search('query=searchable&chain=base')).toHaveLength(1); // read again, from what the first search derived

    await nextMillisecond();
    const graph = balanceGraph();
    graph.nodes[1]!.data.config.network = '1';
    expect((await api(`/api/workflows/${wf.id}`, 'PATCH', graph)).status).toBe(200);
    expect(await search('query=searchable&chain=base')).toEqual([]);
    const onEthereum = await search('query=searchable&chain=1');
    expect(onEthereum.map((r) => ({ id: r.id, chainIds: r.chainIds }))).toEqual([{ id: wf.id, chainIds: [1] }]);

    await nextMillisecond();
    expect((await api(`/api/workflows/${wf.id}`, 'PATCH', { name: 'Renamed balance' })).status).toBe(200);
    expect(await search('query=searchable')).toEqual([]);
    expect((await search('query=renamed')).map((r) => r.name)).toEqual(['Renamed balance']);

    await nextMillisecond();
    expect((await api(`/api/workflows/${wf.id}`, 'PATCH', { visibility: 'private' })).status).toBe(200);
    expect(await search('query=renamed')).toEqual([]);

    await nextMillisecond();
    expect((await api(`/api/workflows/${wf.id}`, 'PATCH', { visibility: 'public' })).status).toBe(200);
    expect(await search('query=renamed')).toHaveLength(1);
    expect((await api(`/api/workflows/${wf.id}`, 'DELETE')).status).toBe(200);
    expect(await search('query=renamed')).toEqual([]);
  });

  it('reads past 200 public workflows without repeating or losing one, answers the first 50 with the count of all, and filters them by type', async () => {
    const made: string[] = [];
    for (let i = 0; i < 205; i++) {
      const wf = await createWorkflowViaApi(gw.url, gw.ownerKey, { name: `Paged p${String(i).padStart(3, '0')}` });
      made.push(wf.id);
    }
    // This gateway lifts the bound on public workflows (50 by default) for this case.
    for (const id of made) expect((await api(`/api/workflows/${id}`, 'PATCH', { visibility: 'public' })).status).toBe(200);
    const all = await fetchJson(`${gw.url}/api/workflows/search?query=paged`);
    expect(all.body.count).toBe(205);
    // The first 50 in the public list's order: the newest published first.
    expect(all.body.results.map((r: { id: string }) => r.id)).toEqual(made.slice(-50).reverse());
    // Every one is found by narrower words, the first published (read last, past 200) too.
    for (const i of [0, 4, 100, 204]) expect((await search(`query=paged+p${String(i).padStart(3, '0')}`)).map((r) => r.id)).toEqual([made[i]]);
    expect(await search('query=paged&workflowType=write')).toEqual([]);
    const reads = await fetchJson(`${gw.url}/api/workflows/search?query=paged&workflowType=read`);
    expect(reads.body).toMatchObject({ count: 205, results: expect.any(Array) });
    expect(reads.body.results).toHaveLength(50);
  });
});
