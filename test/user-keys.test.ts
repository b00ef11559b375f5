import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateUserKey } from '../src/auth/user-keys.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { connectMcp } from './helpers/mcp.ts';
import { orgIdentity } from './helpers/org-fixtures.ts';

let gw: TestGateway;
let admin: string;
let writer: string;
let reader: string;
let other: string;
let me: { organizationId: string; userId: string };

beforeAll(async () => {
  gw = await startTestGateway();
  admin = await gw.createKey({ scope: 'mcp:admin' });
  writer = await gw.createKey({ scope: 'mcp:write' });
  reader = await gw.createKey({ scope: 'mcp:read' });
  other = await gw.createKey({ org: 'other' });
  me = await orgIdentity(gw);
});
afterAll(() => gw.close());

const api = (path: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
  fetchJson(`${gw.url}${path}`, { key: admin, ...init, body: init.json === undefined ? init.body : JSON.stringify(init.json) });

const createKey = async (name: string, key = admin) => {
  const res = await api('/api/api-keys', { method: 'POST', json: { name }, key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; name: string; prefix: string; createdAt: string; key: string };
};

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

describe('POST /api/api-keys', () => {
  it('creates a wfb_ key (201), shown once, stored only as its SHA-256', async () => {
    const created = await createKey(' Zapier hook ');
    expect(created).toEqual({
      id: expect.any(String),
      name: 'Zapier hook',
      prefix: expect.any(String),
      createdAt: expect.any(String),
      key: expect.any(String),
    });
    expect(created.key).toMatch(/^wfb_[A-Za-z0-9_-]{43}$/);
    expect(created.key.startsWith(created.prefix)).toBe(true);
    expect(created.prefix.length).toBeLessThan(created.key.length);

    const row = await gw.gateway.services.store.selectFrom('user_api_keys').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ user_id: me.userId, organization_id: me.organizationId, key_hash: sha256Hex(created.key), revoked_at: null });
    expect(JSON.stringify(row)).not.toContain(created.key);
  });

  it('needs mcp:admin: write and read keys get 403 insufficient_scope', async () => {
    for (const key of [writer, reader]) {
      const res = await api('/api/api-keys', { method: 'POST', json: { name: 'nope' }, key });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('insufficient_scope');
    }
    expect((await fetchJson(`${gw.url}/api/api-keys`, { method: 'POST', body: '{"name":"anon"}' })).status).toBe(401);
  });

  it('refuses a missing, empty, over-long or non-string name with 400', async () => {
    for (const json of [{}, { name: '' }, { name: ' ' }, { name: 'k'.repeat(101) }, { name: 5 }]) {
      const res = await api('/api/api-keys', { method: 'POST', json });
      expect(res.status, JSON.stringify(json).slice(0, 40)).toBe(400);
      expect(res.body.issues[0].path).toBe('name');
    }
  });
});

describe('GET /api/api-keys', () => {
  it('lists prefixes, never the key or its hash (mcp:read suffices)', async () => {
    const created = await createKey('listed');
    const res = await api('/api/api-keys', { key: reader });
    expect(res.status).toBe(200);
    const listed = res.body.find((k: { id: string }) => k.id === created.id);
    expect(listed).toEqual({ id: created.id, name: 'listed', prefix: created.prefix, createdAt: created.createdAt, lastUsedAt: null });
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(created.key);
    expect(text).not.toContain(sha256Hex(created.key));
  });

  it("shows only the caller's organization", async () => {
    const mine = await createKey('mine');
    const theirs = await createKey('theirs', other);
    const listed = (await api('/api/api-keys', { key: other })).body.map((k: { id: string }) => k.id);
    expect(listed).toContain(theirs.id);
    expect(listed).not.toContain(mine.id);
  });
});

describe('DELETE /api/api-keys/:keyId', () => {
  it('revokes the key: no longer listed, no longer authenticates', async () => {
    const created = await createKey('short-lived');
    expect(await authenticateUserKey(gw.gateway.services.store, created.key)).toEqual({
      keyId: created.id,
      userId: me.userId,
      organizationId: me.organizationId,
    });
    const res = await api(`/api/api-keys/${created.id}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, id: created.id });
    expect((await api('/api/api-keys')).body.some((k: { id: string }) => k.id === created.id)).toBe(false);
    expect(await authenticateUserKey(gw.gateway.services.store, created.key)).toBeNull();
    expect((await api(`/api/api-keys/${created.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it("is 404 for another organization's key and for unknown ids; needs mcp:admin", async () => {
    const created = await createKey('protected');
    expect((await api(`/api/api-keys/${created.id}`, { method: 'DELETE', key: other })).status).toBe(404);
    expect((await api('/api/api-keys/unknown', { method: 'DELETE' })).status).toBe(404);
    expect((await api(`/api/api-keys/${created.id}`, { method: 'DELETE', key: writer })).status).toBe(403);
    expect(await authenticateUserKey(gw.gateway.services.store, created.key)).not.toBeNull();
  });
});

describe('authenticateUserKey', () => {
  it('accepts only live wfb_ keys and records their last use', async () => {
    const store = gw.gateway.services.store;
    const created = await createKey('webhook');
    expect(await authenticateUserKey(store, created.key)).toMatchObject({ keyId: created.id });
    expect(await authenticateUserKey(store, `${created.key.slice(0, -1)}${created.key.endsWith('A') ? 'B' : 'A'}`)).toBeNull();
    expect(await authenticateUserKey(store, admin)).toBeNull();
    expect(await authenticateUserKey(store, 'wfb_')).toBeNull();
    expect(await authenticateUserKey(store, '')).toBeNull();
    const listed = (await api('/api/api-keys')).body.find((k: { id: string }) => k.id === created.id);
    expect(listed.lastUsedAt).toEqual(expect.any(String));
  });
});

describe('wfb_ keys are not organization keys', () => {
  it('GET /api/keys (the auth probe) answers 401 for a wfb_ key', async () => {
    const { key } = await createKey('not an org key');
    const res = await fetchJson(`${gw.url}/api/keys`, { key });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
  });

  it('every other authenticated route and MCP refuse it too', async () => {
    const { key } = await createKey('still not');
    for (const path of ['/api/tags', '/api/projects', '/api/api-keys', '/api/user']) {
      expect((await fetchJson(`${gw.url}${path}`, { key })).status, path).toBe(401);
    }
    await expect(connectMcp(gw.url, key)).rejects.toThrow();
  });

  it('webhook key tools are REST-only', async () => {
    const client = await connectMcp(gw.url, admin);
    const names = (await client.listTools()).tools.map((t) => t.name);
    await client.close();
    for (const name of ['create_webhook_key', 'list_webhook_keys', 'delete_webhook_key']) expect(names).not.toContain(name);
  });
});
