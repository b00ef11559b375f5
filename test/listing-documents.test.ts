import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/db.ts';
import { fetchJson, openTestStoreFor, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * The documents that name every listing (/openapi.json, GET /api/mcp/workflows, /.well-known/x402) are built
 * once per version of the listings (migration 029) and kept: each test changes the listings one way and expects
 * all three documents to show it on the very next request, including a change written by another process.
 * GET /api/public-tags is kept the same way (migration 030): every change to the tags, to which workflows carry
 * them, or to a carrying workflow's visibility shows on the next request too.
 */

let gw: TestGateway;
let key: string;
let beside: Store;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  key = await gw.createKey({ scope: 'mcp:write', org: 'lister' });
  // A second connection to the same database: what another instance (or an operator's SQL) would write.
  beside = await openTestStoreFor(gw.dataDir);
});
afterAll(async () => {
  await beside?.destroy();
  await gw?.close();
});

const graph = {
  nodes: [
    { id: 'trigger', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
    { id: 'sum', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1, 2]' } } },
  ],
  edges: [{ id: 'e0', source: 'trigger', target: 'sum' }],
};
const inputSchema = { type: 'object', properties: { n: { type: 'number' } }, additionalProperties: false };

async function listedWorkflow(slug: string, price: string | null): Promise<string> {
  const created = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key, body: JSON.stringify({ name: slug, ...graph }) });
  expect(created.status).toBe(200);
  const published = await fetchJson(`${gw.url}/api/workflows/${created.body.id}/listing`, {
    method: 'POST',
    key,
    body: JSON.stringify({ slug, description: `The ${slug} listing.`, price, inputSchema }),
  });
  expect(published.status).toBe(200);
  return created.body.id;
}

/** What each of the three documents says about a slug right now. */
async function documents(slug: string) {
  const openApi = await fetchJson(`${gw.url}/openapi.json`);
  const list = await fetchJson(`${gw.url}/api/mcp/workflows`);
  const x402 = await fetchJson(`${gw.url}/.well-known/x402`);
  return {
    etag: openApi.headers.get('etag'),
    openApi: openApi.body.paths[`/api/mcp/workflows/${slug}/call`]?.post as { description?: string; summary?: string } | undefined,
    listed: (list.body.workflows as { slug: string; description: string }[]).find((w) => w.slug === slug),
    count: list.body.count as number,
    paid: (x402.body.resources as string[]).includes(`POST ${gw.url}/api/mcp/workflows/${slug}/call`),
  };
}

describe('documents naming every listing', () => {
  it('show a publish, another process’s edit, an unlist and a delete on the next request', async () => {
    const before = await documents('kept-paid');
    expect(before.listed).toBeUndefined();
    expect(before.openApi).toBeUndefined();
    expect(before.paid).toBe(false);

    const paidId = await listedWorkflow('kept-paid', '0.01');
    const freeId = await listedWorkflow('kept-free', null);
    const published = await documents('kept-paid');
    expect(published.listed?.description).toBe('The kept-paid listing.');
    expect(published.openApi).toBeDefined();
    expect(published.paid).toBe(true);
    expect(published.count).toBe(before.count + 2);
    expect(published.etag).not.toBe(before.etag);
    expect((await documents('kept-free')).listed).toBeDefined();

    // Written by another connection, never through this gateway's code: the trigger moves the version all the same.
    await beside.updateTable('workflow_listings').set({ description: 'Edited elsewhere.' }).where('slug', '=', 'kept-paid').execute();
    const edited = await documents('kept-paid');
    expect(edited.listed?.description).toBe('Edited elsewhere.');
    expect(JSON.stringify(edited.openApi)).toContain('Edited elsewhere.');
    expect(edited.etag).not.toBe(published.etag);

    const unlisted = await fetchJson(`${gw.url}/api/workflows/${freeId}/listing`, { method: 'DELETE', key });
    expect(unlisted.status).toBe(200);
    expect((await documents('kept-free')).listed).toBeUndefined();

    // Deleting the workflow removes its listing by cascade: no code path names the listing, the trigger still fires.
    const deleted = await fetchJson(`${gw.url}/api/workflows/${paidId}`, { method: 'DELETE', key });
    expect(deleted.status).toBe(200);
    const gone = await documents('kept-paid');
    expect(gone.listed).toBeUndefined();
    expect(gone.openApi).toBeUndefined();
    expect(gone.paid).toBe(false);
    expect(gone.count).toBe(before.count);
  });

  it('/openapi.json answers a matching If-None-Match with 304 until a listing changes', async () => {
    const first = await fetchJson(`${gw.url}/openapi.json`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    // Node's http client, not fetch: fetch adds Cache-Control: no-cache to a conditional request.
    const again = await rawGet(`${gw.url}/openapi.json`, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');

    await listedWorkflow('etag-mover', null);
    const changed = await rawGet(`${gw.url}/openapi.json`, { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(Object.keys((JSON.parse(changed.body) as { paths: object }).paths)).toContain('/api/mcp/workflows/etag-mover/call');
  });
});

/** The tag with `slug` as the anonymous list shows it now. */
async function shown(slug: string): Promise<{ name: string; workflowCount: number } | undefined> {
  const list = await fetchJson(`${gw.url}/api/public-tags`);
  expect(list.status).toBe(200);
  return (list.body as { slug: string; name: string; workflowCount: number }[]).find((t) => t.slug === slug);
}

describe('the public tag list', () => {
  it('shows each change on the next request: a new tag, a workflow going live with it, going private, deleted, and a rename from outside', async () => {
    const tag = await fetchJson(`${gw.url}/api/public-tags`, { method: 'POST', key, body: JSON.stringify({ name: 'Kept Tag' }) });
    expect(tag.status).toBe(201);
    expect(await shown('kept-tag')).toMatchObject({ name: 'Kept Tag', workflowCount: 0 });

    const created = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key, body: JSON.stringify({ name: 'Tagged', ...graph }) });
    const id = created.body.id as string;
    const live = await fetchJson(`${gw.url}/api/workflows/${id}/go-live`, {
      method: 'PUT',
      key,
      body: JSON.stringify({ name: 'Tagged', publicTagIds: [tag.body.id] }),
    });
    expect(live.status).toBe(200);
    expect(await shown('kept-tag')).toMatchObject({ workflowCount: 1 });

    const hidden = await fetchJson(`${gw.url}/api/workflows/${id}`, { method: 'PATCH', key, body: JSON.stringify({ visibility: 'private' }) });
    expect(hidden.status).toBe(200);
    expect(await shown('kept-tag')).toMatchObject({ workflowCount: 0 });

    await fetchJson(`${gw.url}/api/workflows/${id}/go-live`, { method: 'PUT', key, body: JSON.stringify({ name: 'Tagged', publicTagIds: [tag.body.id] }) });
    expect(await shown('kept-tag')).toMatchObject({ workflowCount: 1 });
    // Deleted with its links by cascade.
    expect((await fetchJson(`${gw.url}/api/workflows/${id}`, { method: 'DELETE', key })).status).toBe(200);
    expect(await shown('kept-tag')).toMatchObject({ workflowCount: 0 });

    // Written by another process, never through this gateway's code.
    await beside.updateTable('public_tags').set({ name: 'Renamed Elsewhere' }).where('slug', '=', 'kept-tag').execute();
    expect(await shown('kept-tag')).toMatchObject({ name: 'Renamed Elsewhere' });
    await beside.deleteFrom('public_tags').where('slug', '=', 'kept-tag').execute();
    expect(await shown('kept-tag')).toBeUndefined();
  });
});

describe('search over public workflows', () => {
  /** The names anonymous search finds for `query` now. */
  const found = async (query: string) => {
    const res = await fetchJson(`${gw.url}/api/workflows/search?query=${encodeURIComponent(query)}`);
    expect(res.status).toBe(200);
    return (res.body.results as { name: string }[]).map((r) => r.name);
  };

  it('shows each change on the next request: going live, a rename, going private, a tag renamed from outside, a delete', async () => {
    const tag = await fetchJson(`${gw.url}/api/public-tags`, { method: 'POST', key, body: JSON.stringify({ name: 'Searchable Tag' }) });
    const created = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key, body: JSON.stringify({ name: 'Zebra Finder', ...graph }) });
    const id = created.body.id as string;
    expect(await found('zebra')).toEqual([]);
    const goLive = (name: string) =>
      fetchJson(`${gw.url}/api/workflows/${id}/go-live`, { method: 'PUT', key, body: JSON.stringify({ name, publicTagIds: [tag.body.id] }) });
    expect((await goLive('Zebra Finder')).status).toBe(200);
    expect(await found('zebra')).toEqual(['Zebra Finder']);

    expect((await fetchJson(`${gw.url}/api/workflows/${id}`, { method: 'PATCH', key, body: JSON.stringify({ name: 'Okapi Finder' }) })).status).toBe(200);
    expect(await found('zebra')).toEqual([]);
    expect(await found('okapi')).toEqual(['Okapi Finder']);

    expect((await fetchJson(`${gw.url}/api/workflows/${id}`, { method: 'PATCH', key, body: JSON.stringify({ visibility: 'private' }) })).status).toBe(200);
    expect(await found('okapi')).toEqual([]);
    await goLive('Okapi Finder');

    // Written by another process, never through this gateway's code: a tag's name and a workflow's description.
    await beside.updateTable('public_tags').set({ name: 'Striped Elsewhere' }).where('id', '=', tag.body.id).execute();
    expect(await found('striped')).toEqual(['Okapi Finder']);
    await beside.updateTable('workflows').set({ description: 'Finds quaggas' }).where('id', '=', id).execute();
    expect(await found('quaggas')).toEqual(['Okapi Finder']);

    expect((await fetchJson(`${gw.url}/api/workflows/${id}`, { method: 'DELETE', key })).status).toBe(200);
    expect(await found('okapi')).toEqual([]);
  });
});

describe('the public workflow list', () => {
  /** What the anonymous public list (a page of it, when `query` says so) holds of this test's workflows now. */
  const listed = async (query = '') => {
    const res = await fetchJson(`${gw.url}/api/workflows/public${query}`);
    expect(res.status).toBe(200);
    return (res.body as { id: string; name: string; description: string | null; publicTags: { name: string }[]; nodes: unknown[] }[]).filter((w) =>
      w.name.startsWith('Gnu '),
    );
  };

  it('answers a repeated request the same, and shows each change on the next one: a rename, a tag, a graph, another connection’s write, going private, a delete', async () => {
    const tag = await fetchJson(`${gw.url}/api/public-tags`, { method: 'POST', key, body: JSON.stringify({ name: 'Listed Tag' }) });
    const created = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key, body: JSON.stringify({ name: 'Gnu One', ...graph }) });
    const id = created.body.id as string;
    const patch = (body: unknown) => fetchJson(`${gw.url}/api/workflows/${id}`, { method: 'PATCH', key, body: JSON.stringify(body) });
    expect((await fetchJson(`${gw.url}/api/workflows/${id}/go-live`, { method: 'PUT', key, body: JSON.stringify({ name: 'Gnu One' }) })).status).toBe(200);
    const first = await fetchJson(`${gw.url}/api/workflows/public`);
    const again = await fetchJson(`${gw.url}/api/workflows/public`);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    expect((await listed()).map((w) => w.name)).toEqual(['Gnu One']);
    expect((await listed('?limit=200')).map((w) => w.name)).toEqual(['Gnu One']);

    expect((await patch({ name: 'Gnu Two' })).status).toBe(200);
    expect((await listed()).map((w) => w.name)).toEqual(['Gnu Two']);
    expect((await listed('?limit=200')).map((w) => w.name)).toEqual(['Gnu Two']);
    expect(
      (await fetchJson(`${gw.url}/api/workflows/${id}/go-live`, { method: 'PUT', key, body: JSON.stringify({ name: 'Gnu Two', publicTagIds: [tag.body.id] }) }))
        .status,
    ).toBe(200);
    expect((await listed())[0]!.publicTags.map((t) => t.name)).toEqual(['Listed Tag']);
    const longer = { ...graph, nodes: [...graph.nodes, { id: 'more', type: 'action', data: { label: 'More', config: graph.nodes[1]!.data.config } }] };
    expect((await patch({ nodes: longer.nodes })).status).toBe(200);
    expect((await listed())[0]!.nodes).toHaveLength(3);

    // Written by another process: the description, and the tag's name.
    await beside.updateTable('workflows').set({ description: 'Grazes elsewhere' }).where('id', '=', id).execute();
    expect((await listed())[0]!.description).toBe('Grazes elsewhere');
    await beside.updateTable('public_tags').set({ name: 'Renamed Elsewhere' }).where('id', '=', tag.body.id).execute();
    expect((await listed())[0]!.publicTags.map((t) => t.name)).toEqual(['Renamed Elsewhere']);

    expect((await patch({ visibility: 'private' })).status).toBe(200);
    expect(await listed()).toEqual([]);
    expect((await patch({ visibility: 'public' })).status).toBe(200);
    expect((await listed()).map((w) => w.name)).toEqual(['Gnu Two']);
    expect((await fetchJson(`${gw.url}/api/workflows/${id}`, { method: 'DELETE', key })).status).toBe(200);
    expect(await listed()).toEqual([]);
    expect(await listed('?limit=200')).toEqual([]);
  });
});
