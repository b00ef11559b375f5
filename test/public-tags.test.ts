import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slugify } from '../src/text/slug.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { insertWorkflow, orgIdentity } from './helpers/org-fixtures.ts';

let gw: TestGateway;
let owner: string;
let reader: string;
let other: string;

beforeAll(async () => {
  gw = await startTestGateway();
  owner = gw.ownerKey;
  reader = await gw.createKey({ scope: 'mcp:read' });
  other = await gw.createKey({ org: 'other' });
});
afterAll(() => gw.close());

const api = (path: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
  fetchJson(`${gw.url}${path}`, { key: owner, ...init, body: init.json === undefined ? init.body : JSON.stringify(init.json) });

const createPublicTag = async (name: string, key = owner) => {
  const res = await api('/api/public-tags', { method: 'POST', json: { name }, key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
};

describe('slugify', () => {
  it.each([
    ['DeFi Yield!', 'defi-yield'],
    ['  Liquid   Staking  ', 'liquid-staking'],
    ['Crème Brûlée', 'creme-brulee'],
    ['NFT/Art & Collectibles', 'nft-art-collectibles'],
    ['--Layer_2--', 'layer-2'],
    ['ERC-4626', 'erc-4626'],
    ['日本語', ''],
    ['!!!', ''],
  ])('%j → %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });
});

describe('POST /api/public-tags', () => {
  it('creates a tag (201) with a slug derived from the name', async () => {
    const res = await api('/api/public-tags', { method: 'POST', json: { name: 'DeFi Yield!' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String), name: 'DeFi Yield!', slug: 'defi-yield', workflowCount: 0, createdAt: expect.any(String) });
  });

  it('answers 409 with the existing tag when the slug is taken, from any organization', async () => {
    const first = await createPublicTag('Bridges');
    for (const [name, key] of [
      ['bridges', owner],
      ['  BRIDGES!! ', other],
    ] as const) {
      const res = await api('/api/public-tags', { method: 'POST', json: { name }, key });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('conflict');
      expect(res.body.existing).toEqual(first);
      expect(res.body.error).toContain(first.id);
    }
  });

  it('refuses names without ASCII letters or digits, empty, over-long or non-string names', async () => {
    for (const name of ['日本語', '!!!', '', '  ', 'n'.repeat(101), 12, null]) {
      const res = await api('/api/public-tags', { method: 'POST', json: { name } });
      expect(res.status, JSON.stringify(name)).toBe(400);
      expect(res.body.code).toBe('invalid_input');
      expect(res.body.error).toContain('name');
    }
  });

  it('requires authentication and mcp:write', async () => {
    const anonymous = await fetchJson(`${gw.url}/api/public-tags`, { method: 'POST', body: JSON.stringify({ name: 'anon' }) });
    expect(anonymous.status).toBe(401);
    const read = await api('/api/public-tags', { method: 'POST', json: { name: 'read only' }, key: reader });
    expect(read.status).toBe(403);
    expect(read.body.code).toBe('insufficient_scope');
  });
});

describe('GET /api/public-tags', () => {
  it('is public and counts public workflows only', async () => {
    const me = await orgIdentity(gw);
    const them = await orgIdentity(gw, 'other');
    const tag = await createPublicTag('Arbitrage');
    const store = gw.gateway.services.store;
    const attach = async (workflowId: string) => store.insertInto('workflow_public_tags').values({ workflow_id: workflowId, public_tag_id: tag.id }).execute();
    await attach(await insertWorkflow(gw, { ...me, visibility: 'public' }));
    await attach(await insertWorkflow(gw, { ...them, visibility: 'public' }));
    await attach(await insertWorkflow(gw, { ...me, visibility: 'private' }));

    const res = await fetchJson(`${gw.url}/api/public-tags`);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.find((t: { id: string }) => t.id === tag.id)).toEqual({ ...tag, workflowCount: 2 });
  });

  it('shows every organization the same tags', async () => {
    await createPublicTag('Shared vocabulary', other);
    const [mine, theirs] = await Promise.all([api('/api/public-tags'), api('/api/public-tags', { key: other })]);
    expect(mine.body).toEqual(theirs.body);
    expect(mine.body.some((t: { slug: string }) => t.slug === 'shared-vocabulary')).toBe(true);
  });
});

describe('MCP', () => {
  it('list_public_tags works without a key; create_public_tag with one', async () => {
    const anonymous = await connectMcp(gw.url);
    const listed = await callTool(anonymous, 'list_public_tags');
    expect(listed.isError).toBe(false);
    expect(Array.isArray(listed.structured.publicTags)).toBe(true);
    expect((await anonymous.listTools()).tools.map((t) => t.name)).not.toContain('create_public_tag');
    await anonymous.close();

    const client = await connectMcp(gw.url, owner);
    const created = await callTool(client, 'create_public_tag', { name: 'Agent Made' });
    expect(created.structured).toMatchObject({ slug: 'agent-made', workflowCount: 0 });
    const again = await callTool(client, 'create_public_tag', { name: 'agent made' });
    expect(again.isError).toBe(true);
    expect(again.body).toMatchObject({ code: 'conflict', existing: { id: created.structured.id } });
    await client.close();
  });
});
