import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getIntegrationForRun } from '../src/org/integrations.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { orgIdentity } from './helpers/org-fixtures.ts';
import { storedText } from './helpers/store-faults.ts';

const SECRETS = {
  discordUrlToken: 'discordTOKENabc123secretXYZ',
  apiKey: 'sk-test-SUPERSECRET-0001',
  apiKey2: 'sk-test-REPLACED-0002',
  dbPassword: 'pg-PASSWORD-sekrit-777',
  hookSecret: 'hmac-SECRET-value-888',
  headerToken: 'Bearer HEADER-token-999',
};
const allSecretValues = Object.values(SECRETS);

function expectNoSecrets(value: unknown) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  for (const secret of allSecretValues) expect(text).not.toContain(secret);
}

let gw: TestGateway;
let owner: string;
let reader: string;
let other: string;
let me: { organizationId: string; userId: string };
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let sqliteDir: string;

beforeAll(async () => {
  sqliteDir = tempDir();
  gw = await startTestGateway({ env: { FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1', FLOWGATE_SQLITE_INTEGRATION_DIR: sqliteDir } });
  owner = gw.ownerKey;
  reader = await gw.createKey({ scope: 'mcp:read' });
  other = await gw.createKey({ org: 'other' });
  me = await orgIdentity(gw);
  target = await startHttpTarget();
});
afterAll(async () => {
  await target?.close();
  await gw?.close();
});

const api = (p: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
  fetchJson(`${gw.url}${p}`, { key: owner, ...init, body: init.json === undefined ? init.body : JSON.stringify(init.json) });

const create = async (json: unknown, key = owner) => {
  const res = await api('/api/integrations', { method: 'POST', json, key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expectNoSecrets(res.body);
  return res.body;
};

describe('integrations CRUD', () => {
  it('creates, lists, gets, updates and deletes without ever returning credentials', async () => {
    const created = await create({ name: 'Alerts', type: 'discord', config: { webhookUrl: `https://discord.com/api/webhooks/1/${SECRETS.discordUrlToken}` } });
    expect(created).toEqual({
      id: expect.any(String),
      name: 'Alerts',
      type: 'discord',
      isManaged: false,
      address: null,
      config: {},
      configuredSecrets: ['webhookUrl'],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const list = await api('/api/integrations');
    expect(list.status).toBe(200);
    const row = list.body.data.find((i: { id: string }) => i.id === created.id);
    expect(row).toEqual({
      id: created.id,
      name: 'Alerts',
      type: 'discord',
      isManaged: false,
      address: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(row).not.toHaveProperty('config');
    expectNoSecrets(list.body);

    const filtered = await api('/api/integrations?type=slack');
    expect(filtered.body.data.some((i: { id: string }) => i.id === created.id)).toBe(false);

    const got = await api(`/api/integrations/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body.configuredSecrets).toEqual(['webhookUrl']);
    expectNoSecrets(got.body);

    const renamed = await api(`/api/integrations/${created.id}`, { method: 'PUT', json: { name: 'Ops alerts' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Ops alerts');

    const deleted = await api(`/api/integrations/${created.id}`, { method: 'DELETE' });
    expect(deleted.body).toEqual({ success: true, id: created.id });
    expect((await api(`/api/integrations/${created.id}`)).status).toBe(404);
  });

  it('returns non-credential config and hides database credentials', async () => {
    const created = await create({
      name: 'pg',
      type: 'database',
      config: { driver: 'postgres', host: 'db.internal', port: 5432, user: 'app', password: SECRETS.dbPassword },
    });
    expect(created.config).toEqual({ driver: 'postgres', host: 'db.internal', port: 5432, user: 'app' });
    expect(created.configuredSecrets).toEqual(['password']);
    const run = await getIntegrationForRun(gw.gateway.services, me.organizationId, created.id);
    expect(run.config).toMatchObject({ driver: 'postgres', host: 'db.internal', password: SECRETS.dbPassword });
  });

  it('PUT keeps a credential when omitted or empty and replaces it when given', async () => {
    const created = await create({ name: 'AI', type: 'ai-gateway', config: { apiKey: SECRETS.apiKey, defaultModel: 'a' } });
    const services = gw.gateway.services;

    let res = await api(`/api/integrations/${created.id}`, { method: 'PUT', json: { config: { defaultModel: 'b' } } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.config).toEqual({ defaultModel: 'b' });
    expect((await getIntegrationForRun(services, me.organizationId, created.id)).config).toEqual({ apiKey: SECRETS.apiKey, defaultModel: 'b' });

    res = await api(`/api/integrations/${created.id}`, { method: 'PUT', json: { config: { apiKey: '' } } });
    expect(res.status).toBe(200);
    expect((await getIntegrationForRun(services, me.organizationId, created.id)).config.apiKey).toBe(SECRETS.apiKey);

    res = await api(`/api/integrations/${created.id}`, { method: 'PUT', json: { config: { apiKey: SECRETS.apiKey2 } } });
    expect(res.status).toBe(200);
    expectNoSecrets(res.body);
    expect((await getIntegrationForRun(services, me.organizationId, created.id)).config.apiKey).toBe(SECRETS.apiKey2);
  });

  it('checksums web3 addresses; other types have a null address', async () => {
    const lower = '0xd8da6bf26964af9d7eed9e03e53415d37aa96045';
    const created = await create({ name: 'Vitalik', type: 'web3', config: { address: lower } });
    expect(created.address).toBe('0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045');
    const list = await api('/api/integrations?type=web3');
    expect(list.body.data.find((i: { id: string }) => i.id === created.id).address).toBe('0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045');
    const bad = await api('/api/integrations', { method: 'POST', json: { name: 'x', type: 'web3', config: { address: '0x123' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
  });

  it('refuses an unknown type with the valid types and a suggestion, and invalid config per type', async () => {
    const res = await api('/api/integrations', { method: 'POST', json: { name: 'x', type: 'Discrd', config: {} } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.error).toContain('Did you mean "discord"');
    expect(res.body.validTypes).toContain('sendgrid');
    const missing = await api('/api/integrations', { method: 'POST', json: { name: 'x', type: 'telegram', config: { chatId: 1 } } });
    expect(missing.status).toBe(400);
    expect(missing.body.issues.map((i: { path: string }) => i.path)).toEqual(['config.botToken']);
    const unknownKey = await api('/api/integrations', { method: 'POST', json: { name: 'x', type: 'resend', config: { apiKey: SECRETS.apiKey, apikey2: 1 } } });
    expect(unknownKey.status).toBe(400);
    expectNoSecrets(unknownKey.body);
  });

  it("hides other organizations' integrations (404) and enforces scopes", async () => {
    const created = await create({ name: 'mine', type: 'sendgrid', config: { apiKey: SECRETS.apiKey } });
    for (const [method, p] of [
      ['GET', `/api/integrations/${created.id}`],
      ['PUT', `/api/integrations/${created.id}`],
      ['DELETE', `/api/integrations/${created.id}`],
      ['POST', `/api/integrations/${created.id}/test`],
    ] as const) {
      const res = await api(p, { method, key: other, json: method === 'PUT' ? { name: 'stolen' } : method === 'POST' ? {} : undefined });
      expect(res.status, `${method} ${p}`).toBe(404);
    }
    expect((await api('/api/integrations', { key: other })).body.data.some((i: { id: string }) => i.id === created.id)).toBe(false);
    const them = await orgIdentity(gw, 'other');
    await expect(getIntegrationForRun(gw.gateway.services, them.organizationId, created.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });

    const denied = await api('/api/integrations', { method: 'POST', key: reader, json: { name: 'r', type: 'resend', config: { apiKey: 'k' } } });
    expect(denied.status).toBe(403);
    expect((await api('/api/integrations', { key: reader })).status).toBe(200);
  });

  it('stores credentials sealed, never in plain text in the database files', async () => {
    await create({
      name: 'hook',
      type: 'webhook',
      config: { url: `${target.url}/hook`, secret: SECRETS.hookSecret, headers: { authorization: SECRETS.headerToken } },
    });
    const rows = await gw.gateway.services.store.selectFrom('integrations').select(['config', 'credentials_encrypted']).execute();
    for (const row of rows) {
      expect(row.credentials_encrypted.startsWith('v1:')).toBe(true);
      expectNoSecrets(row.config);
      expectNoSecrets(row.credentials_encrypted);
    }
    const stored = await storedText(gw.gateway.services.store, gw.dataDir);
    expect(stored).toContain(rows[0].credentials_encrypted.slice(0, 40)); // it really read the stored rows
    for (const secret of allSecretValues) expect(stored.includes(secret), 'the database holds a secret in plain text').toBe(false);
  });
});

describe('POST /api/integrations/:id/test', () => {
  it('posts a test message to a webhook on an allowed host, with overrides not saved', async () => {
    const created = await create({ name: 'echo', type: 'webhook', config: { url: `${target.url}/hook`, headers: { authorization: SECRETS.headerToken } } });
    const before = target.hits.length;
    const res = await api(`/api/integrations/${created.id}/test`, { method: 'POST', json: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ status: 'success', message: expect.any(String) });
    expect(target.hits.length).toBe(before + 1);
    expect(JSON.parse(target.hits.at(-1)!.body).type).toBe('flowgate.test');

    const over = await api(`/api/integrations/${created.id}/test`, {
      method: 'POST',
      json: { configOverrides: { url: `${target.url}/override`, headers: { authorization: 'Bearer test-only' } } },
    });
    expect(over.status).toBe(200);
    expect(target.hits.at(-1)!.url).toBe('/override');
    const saved = await api(`/api/integrations/${created.id}`);
    expect(saved.body.configuredSecrets).toEqual(['headers', 'url']);
    expect((await getIntegrationForRun(gw.gateway.services, me.organizationId, created.id)).config.url).toBe(`${target.url}/hook`);
  });

  it('reports a failing discord test as 400 integration_test_failed without the token', async () => {
    const created = await create({ name: 'bad', type: 'discord', config: { webhookUrl: `${target.url}/hang/${SECRETS.discordUrlToken}` } });
    // Non-2xx: point at a closed port.
    const closed = `http://127.0.0.1:1/api/webhooks/${SECRETS.discordUrlToken}`;
    const res = await api(`/api/integrations/${created.id}/test`, { method: 'POST', json: { configOverrides: { webhookUrl: closed } } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('integration_test_failed');
    expectNoSecrets(res.body);
  });

  it('tests a sqlite database file and reports a missing one', async () => {
    const file = path.join(sqliteDir, 'data.sqlite');
    const db = new Sqlite(file);
    db.exec('create table t (x int)');
    db.close();
    const created = await create({ name: 'local db', type: 'database', config: { driver: 'sqlite', path: file } });
    const ok = await api(`/api/integrations/${created.id}/test`, { method: 'POST', json: {} });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.message).toContain('select 1');
    const missing = await api(`/api/integrations/${created.id}/test`, { method: 'POST', json: { configOverrides: { path: `${file}.missing` } } });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('integration_test_failed');

    const pg = await create({ name: 'pg2', type: 'database', config: { driver: 'postgres', connectionString: `postgres://u:${SECRETS.dbPassword}@h/db` } });
    // A server that cannot be reached: a clear 400 whose message never carries the password.
    const unreachable = await api(`/api/integrations/${pg.id}/test`, {
      method: 'POST',
      json: { configOverrides: { connectionString: `postgres://u:${SECRETS.dbPassword}@127.0.0.1:1/db` } },
    });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.code).toBe('integration_test_failed');
    expectNoSecrets(unreachable.body);
  });

  it('refuses a loopback target when the host is not on the allow list, without leaking the secret', async () => {
    const strict = await startTestGateway();
    try {
      const headers = { authorization: `Bearer ${strict.ownerKey}`, 'content-type': 'application/json' };
      const created = await fetchJson(`${strict.url}/api/integrations`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'loop', type: 'discord', config: { webhookUrl: `${target.url}/api/webhooks/${SECRETS.discordUrlToken}` } }),
      });
      expect(created.status).toBe(201);
      const before = target.hits.length;
      const res = await fetchJson(`${strict.url}/api/integrations/${created.body.id}/test`, { method: 'POST', headers, body: '{}' });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('integration_test_failed');
      expect(res.body.error).toContain('FLOWGATE_HTTP_ALLOW_HOSTS');
      expectNoSecrets(res.body);
      expect(target.hits.length).toBe(before);
    } finally {
      await strict.close();
    }
  });
});

describe('MCP', () => {
  it('list_integrations is read-only and available to mcp:read keys', async () => {
    const created = await create({ name: 'mcp one', type: 'telegram', config: { botToken: SECRETS.apiKey, chatId: '42' } });
    const client = await connectMcp(gw.url, reader);
    try {
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.name === 'list_integrations');
      expect(tool?.annotations?.readOnlyHint).toBe(true);
      const res = await callTool(client, 'list_integrations', { type: 'telegram' });
      expect(res.isError).toBe(false);
      expect(res.body.data.map((i: { id: string }) => i.id)).toContain(created.id);
      expectNoSecrets(res.body);
    } finally {
      await client.close();
    }
  });
});
