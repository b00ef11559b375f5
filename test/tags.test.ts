import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, nowIso } from '../src/ids.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { insertWorkflow, orgIdentity, workflowRow } from './helpers/org-fixtures.ts';

let gw: TestGateway;
let owner: string;
let reader: string;
let other: string;
let me: { organizationId: string; userId: string };
let them: { organizationId: string; userId: string };

beforeAll(async () => {
  gw = await startTestGateway();
  owner = gw.ownerKey;
  reader = await gw.createKey({ scope: 'mcp:read' });
  other = await gw.createKey({ org: 'other' });
  me = await orgIdentity(gw);
  them = await orgIdentity(gw, 'other');
});
afterAll(() => gw.close());

const api = (path: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
  fetchJson(`${gw.url}${path}`, { key: owner, ...init, body: init.json === undefined ? init.body : JSON.stringify(init.json) });

const createTag = async (name: string, color = '#336699', key = owner) => {
  const res = await api('/api/tags', { method: 'POST', json: { name, color }, key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
};

describe('POST /api/tags', () => {
  it('creates a tag (201) with the documented fields, trimmed name and lowercase color', async () => {
    const res = await api('/api/tags', { method: 'POST', json: { name: '  Treasury  ', color: '#AbC' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Treasury',
      color: '#abc',
      organizationId: me.organizationId,
      userId: me.userId,
      workflowCount: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it('requires both name and color', async () => {
    const noColor = await api('/api/tags', { method: 'POST', json: { name: 'x' } });
    expect(noColor.status).toBe(400);
    expect(noColor.body.code).toBe('invalid_input');
    expect(noColor.body.issues.map((i: { path: string }) => i.path)).toEqual(['color']);
    const noName = await api('/api/tags', { method: 'POST', json: { color: '#fff' } });
    expect(noName.status).toBe(400);
    expect(noName.body.issues.map((i: { path: string }) => i.path)).toEqual(['name']);
  });

  it('refuses a NUL character in any text field on every store, naming the field, and stores nothing', async () => {
    const before = (await api('/api/tags')).body.length;
    const rest = await api('/api/tags', { method: 'POST', json: { name: 'bad\u0000name', color: '#fff' } });
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ code: 'invalid_input', issues: [{ path: 'name', code: 'nul_character' }] });
    expect(rest.body.error).toMatch(/NUL/);
    // In an id of the path too: a clear 400, not a store error.
    const byId = await api(`/api/tags/${encodeURIComponent('tag\u0000id')}`, { method: 'PATCH', json: { name: 'x' } });
    expect(byId.status, JSON.stringify(byId.body)).toBe(400);
    expect(byId.body.code).toBe('invalid_input');
    const after = (await api('/api/tags')).body.length;
    expect(after).toBe(before);
  });

  it('refuses text that is not text: a lone surrogate escape and bytes that are not UTF-8, storing nothing', async () => {
    const before = (await api('/api/tags')).body.length;
    // JSON.stringify writes a lone surrogate as the escape \ud800: valid JSON, not a character.
    const surrogate = await api('/api/tags', { method: 'POST', json: { name: 'ab\ud800cd', color: '#fff' } });
    expect(surrogate.status).toBe(400);
    expect(surrogate.body).toMatchObject({ code: 'invalid_input', issues: [{ path: 'name', code: 'lone_surrogate' }] });
    // Raw bytes 0xff 0xfe inside the string: before, stored as two U+FFFD.
    const bytes = Buffer.concat([Buffer.from('{"name":"ab'), Buffer.from([0xff, 0xfe]), Buffer.from('cd","color":"#fff"}')]);
    const latin = await fetch(`${gw.url}/api/tags`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.ownerKey}`, 'content-type': 'application/json' },
      body: bytes,
    });
    expect(latin.status).toBe(400);
    expect(await latin.json()).toMatchObject({ code: 'invalid_json' });
    // A whole character outside the BMP (a surrogate pair) is text, and kept.
    const emoji = await api('/api/tags', { method: 'POST', json: { name: 'gem \u{1F48E}', color: '#fff' } });
    expect(emoji.status, JSON.stringify(emoji.body)).toBe(201);
    expect(emoji.body.name).toBe('gem \u{1F48E}');
    expect((await api('/api/tags')).body.length).toBe(before + 1);
  });

  it.each([['red'], ['#12345'], ['#ggg'], ['fff'], ['#1234567'], ['']])('refuses color %j naming the field and the value', async (color) => {
    const res = await api('/api/tags', { method: 'POST', json: { name: `c ${color}`, color } });
    expect(res.status).toBe(400);
    expect(res.body.issues[0].path).toBe('color');
    expect(res.body.error).toContain('color');
    expect(res.body.error).toContain(JSON.stringify(color));
  });

  it('accepts #rgb and #rrggbb', async () => {
    expect((await createTag('short', '#0f0')).color).toBe('#0f0');
    expect((await createTag('long', '#00FF00')).color).toBe('#00ff00');
  });

  it('refuses wrong types, empty and over-long names with 400, never 500', async () => {
    for (const json of [
      { name: 42, color: '#fff' },
      { name: '   ', color: '#fff' },
      { name: 'x'.repeat(101), color: '#fff' },
      { name: 'x', color: 123 },
      { name: ['a'], color: '#fff' },
    ]) {
      const res = await api('/api/tags', { method: 'POST', json });
      expect(res.status, JSON.stringify(json).slice(0, 80)).toBe(400);
      expect(res.body.code).toBe('invalid_input');
    }
    expect((await createTag('y'.repeat(100))).name).toHaveLength(100);
  });

  it('answers 409 conflict for a name already used in the organization, ignoring case', async () => {
    const first = await createTag('Payroll');
    const res = await api('/api/tags', { method: 'POST', json: { name: 'payroll', color: '#fff' } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'conflict', existingTagId: first.id });
    // Beyond ASCII too, on both stores (SQLite's lower() folds ASCII only).
    const umlaut = await createTag('Ärger');
    const folded = await api('/api/tags', { method: 'POST', json: { name: 'äRGER', color: '#fff' } });
    expect(folded.status).toBe(409);
    expect(folded.body).toMatchObject({ code: 'conflict', existingTagId: umlaut.id });
  });

  it('lets another organization use the same name', async () => {
    await createTag('Shared name');
    expect((await createTag('Shared name', '#fff', other)).organizationId).toBe(them.organizationId);
  });
});

describe('GET /api/tags', () => {
  it('lists the organization tags with workflowCount', async () => {
    const tag = await createTag('Counted');
    const unused = await createTag('Unused');
    await insertWorkflow(gw, { ...me, tagId: tag.id });
    await insertWorkflow(gw, { ...me, tagId: tag.id, visibility: 'public' });
    await insertWorkflow(gw, { ...me });

    const res = await api('/api/tags', { key: reader });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    const byId = new Map(res.body.map((t: { id: string }) => [t.id, t]));
    expect(byId.get(tag.id)).toMatchObject({ name: 'Counted', workflowCount: 2 });
    expect(byId.get(unused.id)).toMatchObject({ workflowCount: 0 });
    expect(res.body.every((t: { organizationId: string }) => t.organizationId === me.organizationId)).toBe(true);
  });

  it('needs a key', async () => {
    const res = await fetchJson(`${gw.url}/api/tags`);
    expect(res.status).toBe(401);
  });
});

describe('PATCH /api/tags/:tagId', () => {
  it('changes only the provided fields', async () => {
    const tag = await createTag('Before', '#111111');
    const renamed = await api(`/api/tags/${tag.id}`, { method: 'PATCH', json: { name: 'After' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: tag.id, name: 'After', color: '#111111', createdAt: tag.createdAt });
    const recolored = await api(`/api/tags/${tag.id}`, { method: 'PATCH', json: { color: '#222' } });
    expect(recolored.body).toMatchObject({ name: 'After', color: '#222' });
    expect(recolored.body.updatedAt >= tag.updatedAt).toBe(true);
  });

  it('keeps the workflow count and allows a case change of its own name', async () => {
    const tag = await createTag('case');
    await insertWorkflow(gw, { ...me, tagId: tag.id });
    const res = await api(`/api/tags/${tag.id}`, { method: 'PATCH', json: { name: 'CASE' } });
    expect(res.body).toMatchObject({ name: 'CASE', workflowCount: 1 });
  });

  it('refuses an empty patch, a bad color and a name taken by another tag', async () => {
    const tag = await createTag('Patchable');
    await createTag('Taken');
    const empty = await api(`/api/tags/${tag.id}`, { method: 'PATCH', json: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toContain('at least one of name, color');
    const bad = await api(`/api/tags/${tag.id}`, { method: 'PATCH', json: { color: 'blue' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('"blue"');
    expect((await api(`/api/tags/${tag.id}`, { method: 'PATCH', json: { name: 'taken' } })).status).toBe(409);
  });

  it('is 404 for an unknown id', async () => {
    const res = await api('/api/tags/nope', { method: 'PATCH', json: { name: 'x' } });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });
});

describe('DELETE /api/tags/:tagId', () => {
  it('deletes the tag and keeps its workflows, untagged, saying how many', async () => {
    const tag = await createTag('Doomed');
    const a = await insertWorkflow(gw, { ...me, tagId: tag.id });
    const b = await insertWorkflow(gw, { ...me, tagId: tag.id });
    const res = await api(`/api/tags/${tag.id}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, id: tag.id, untaggedWorkflows: 2 });
    for (const id of [a, b]) expect(await workflowRow(gw, id)).toMatchObject({ id, tag_id: null });
    const list = await api('/api/tags');
    expect(list.body.some((t: { id: string }) => t.id === tag.id)).toBe(false);
    expect((await api(`/api/tags/${tag.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('the foreign key itself sets workflows.tag_id to null (ON DELETE SET NULL)', async () => {
    const store = gw.gateway.services.store;
    const tagId = newId();
    const now = nowIso();
    await store
      .insertInto('tags')
      .values({ id: tagId, organization_id: me.organizationId, user_id: me.userId, name: 'fk probe', color: '#000', created_at: now, updated_at: now })
      .execute();
    const wf = await insertWorkflow(gw, { ...me, tagId });
    await store.deleteFrom('tags').where('id', '=', tagId).execute();
    expect(await workflowRow(gw, wf)).toMatchObject({ tag_id: null });
  });

  it('needs mcp:write', async () => {
    const tag = await createTag('Guarded');
    const res = await api(`/api/tags/${tag.id}`, { method: 'DELETE', key: reader });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('insufficient_scope');
  });
});

describe('scopes and organizations', () => {
  it('an mcp:read key lists but cannot create (403 insufficient_scope)', async () => {
    const res = await api('/api/tags', { method: 'POST', json: { name: 'nope', color: '#fff' }, key: reader });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('insufficient_scope');
  });

  it("another organization cannot see, patch or delete this organization's tags: 404, never 403", async () => {
    const tag = await createTag('Private to default');
    await insertWorkflow(gw, { ...me, tagId: tag.id });
    const theirs = await api('/api/tags', { key: other });
    expect(theirs.body.some((t: { id: string }) => t.id === tag.id)).toBe(false);
    expect(theirs.body.every((t: { organizationId: string }) => t.organizationId === them.organizationId)).toBe(true);

    const patch = await api(`/api/tags/${tag.id}`, { method: 'PATCH', json: { name: 'hijacked' }, key: other });
    expect(patch.status).toBe(404);
    const del = await api(`/api/tags/${tag.id}`, { method: 'DELETE', key: other });
    expect(del.status).toBe(404);
    const mine = (await api('/api/tags')).body.find((t: { id: string }) => t.id === tag.id);
    expect(mine).toMatchObject({ name: 'Private to default', workflowCount: 1 });
  });
});

describe('MCP', () => {
  let client: Client;
  beforeAll(async () => {
    client = await connectMcp(gw.url, owner);
  });
  afterAll(() => client.close());

  it('lists the tag tools with their annotations', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('list_tags')?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('create_tag')?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get('delete_tag')?.annotations?.destructiveHint).toBe(true);
    expect(byName.get('create_tag')?.inputSchema.required).toEqual(['name', 'color']);
  });

  it('create_tag then list_tags', async () => {
    const created = await callTool(client, 'create_tag', { name: 'From MCP', color: '#123456' });
    expect(created.isError).toBe(false);
    expect(created.structured).toMatchObject({ name: 'From MCP', color: '#123456', organizationId: me.organizationId });
    const listed = await callTool(client, 'list_tags');
    expect(listed.structured.tags.some((t: { id: string }) => t.id === created.structured.id)).toBe(true);
  });

  it('create_tag reports a bad color as a tool error naming the field', async () => {
    const res = await callTool(client, 'create_tag', { name: 'Bad', color: 'purple' });
    expect(res.isError).toBe(true);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.issues[0].path).toBe('color');
    expect(res.body.error).toContain('"purple"');
  });

  it('an mcp:read key does not see create_tag', async () => {
    const readClient = await connectMcp(gw.url, reader);
    const names = (await readClient.listTools()).tools.map((t) => t.name);
    await readClient.close();
    expect(names).toContain('list_tags');
    expect(names).not.toContain('create_tag');
  });
});
