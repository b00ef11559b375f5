import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/db.ts';
import { fetchJson, openTestStoreFor, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * GET /api/public-tags is kept per version of what it answers (migration 030): every change to the tags,
 * to which workflows carry them, or to a carrying workflow's visibility shows on the very next request,
 * including a change written by another process.
 */

let gw: TestGateway;
let key: string;
let beside: Store;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  key = await gw.createKey({ scope: 'mcp:write', org: 'tagger' });
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
