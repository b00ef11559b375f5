import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WHOLE_LIST_CHARS } from '../src/engine/whole-list.ts';
import { SEARCH_RESULTS } from '../tools/public-workflows.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { insertWorkflow, orgIdentity } from './helpers/org-fixtures.ts';

/**
 * A list asked for whole (no `limit`), or a page of it, is read in batches and refused once
 * its graphs pass MAX_WHOLE_LIST_CHARS, naming `limit`: one organization's
 * workflows (each up to a request body of graph) or every tenant's public
 * ones would otherwise be read into the shared process by one request, and
 * GET /api/workflows/public needs no key. Pages still answer, and another
 * organization's whole list is unaffected. The large rows are written
 * straight into the store (a request body each would take a minute of
 * uploads to say the same).
 */

let gw: TestGateway;
let keyB: string;
const MiB = 1024 * 1024;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const api = (path: string, key = gw.ownerKey) => fetchJson(`${gw.url}${path}`, { key });

/** Writes `count` workflows of the owner's organization whose graphs are `chars` long, created one millisecond apart. */
async function store(count: number, chars: number, visibility: 'private' | 'public', start: number) {
  const owner = await orgIdentity(gw);
  const nodes = [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual', note: 'x'.repeat(chars) } } }];
  for (let i = 0; i < count; i++) {
    const at = new Date(start + i).toISOString();
    await insertWorkflow(gw, {
      ...owner,
      userId: null,
      name: `${visibility} ${i}`,
      visibility,
      nodes,
      createdAt: at,
      publishedAt: visibility === 'public' ? at : null,
    });
  }
}

describe('lists asked for whole', () => {
  it('answer every row, newest first, in one piece while under the bound (read in internal pages, none repeated or lost)', async () => {
    await store(250, 10, 'private', Date.parse('2026-01-01T00:00:00Z'));
    const all = await api('/api/workflows');
    expect(all.status).toBe(200);
    expect(all.body).toHaveLength(250);
    expect(new Set(all.body.map((w: { id: string }) => w.id)).size).toBe(250);
    const names = all.body.map((w: { name: string }) => w.name);
    expect(names[0]).toBe('private 249');
    expect(names.at(-1)).toBe('private 0');
  });

  it('are refused past the bound, naming limit; pages still answer; another organization is unaffected', async () => {
    const rows = Math.ceil(MAX_WHOLE_LIST_CHARS / MiB) + 2;
    await store(rows, MiB, 'public', Date.parse('2026-02-01T00:00:00Z'));

    const whole = await api('/api/workflows');
    expect(whole.status).toBe(400);
    expect(whole.body).toMatchObject({ code: 'invalid_input', field: 'limit' });
    expect(whole.body.error).toContain('GET /api/workflows?limit=200&offset=0');
    const page = await api('/api/workflows?limit=5');
    expect(page.status).toBe(200);
    expect(page.body).toHaveLength(5);

    // A page is bounded the same way: 200 rows of a megabyte would be 200 MB. The refusal says what fits.
    const bigPage = await api('/api/workflows?limit=200');
    expect(bigPage.status).toBe(400);
    expect(bigPage.body).toMatchObject({ code: 'invalid_input', field: 'limit' });
    const suggested = /limit=(\d+), and go on with offset/.exec(bigPage.body.error)?.[1];
    expect(Number(suggested)).toBeGreaterThan(0);
    const fitting = await api(`/api/workflows?limit=${suggested}`);
    expect(fitting.status).toBe(200);
    expect(fitting.body).toHaveLength(Number(suggested));
    const publicBigPage = await fetchJson(`${gw.url}/api/workflows/public?limit=200`);
    expect(publicBigPage.status).toBe(400);
    expect(publicBigPage.body).toMatchObject({ code: 'invalid_input', field: 'limit' });

    // The public list needs no key: the same bound, the same way out.
    const publicWhole = await fetchJson(`${gw.url}/api/workflows/public`);
    expect(publicWhole.status).toBe(400);
    expect(publicWhole.body).toMatchObject({ code: 'invalid_input', field: 'limit' });
    const publicPage = await fetchJson(`${gw.url}/api/workflows/public?limit=3&offset=2`);
    expect(publicPage.status).toBe(200);
    const firstFive = await fetchJson(`${gw.url}/api/workflows/public?limit=5`);
    expect(publicPage.body.map((w: { id: string }) => w.id)).toEqual(firstFive.body.slice(2, 5).map((w: { id: string }) => w.id));
    expect((await fetchJson(`${gw.url}/api/workflows/public?offset=2`)).status).toBe(400);

    // Search reads every public workflow a page at a time, so it still counts them all (and answers the first 50).
    const search = await fetchJson(`${gw.url}/api/workflows/search?query=public`);
    expect(search.status).toBe(200);
    expect(search.body.count).toBe(rows);
    expect(search.body.results.filter((r: { name: string }) => r.name.startsWith('public ')).length).toBe(Math.min(rows, SEARCH_RESULTS));

    expect((await api('/api/workflows', keyB)).status).toBe(200);
  }, 60_000);
});
