import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { getIntegrationForRun } from '../src/org/integrations.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { addMember } from './helpers/members.ts';

/**
 * Stored credentials are never returned, so a member (any `mcp:write` key)
 * who may use an integration must not read its credential by pointing the
 * integration, or one live test of it, at a host the member controls. Moving
 * where the requests go needs every kept credential typed again.
 */

const BOT_TOKEN = '424242:owner-bot-token-never-shown';
const HEADER_TOKEN = 'Bearer owner-header-token-never-shown';
const DB_PASSWORD = 'owner-db-password-never-shown';

let gw: TestGateway;
let provider: Awaited<ReturnType<typeof startHttpTarget>>;
let attacker: Awaited<ReturnType<typeof startHttpTarget>>;
let organizationId: string;
let ownerKey: string;
let memberKey: string;

const as =
  (key: string) =>
  (path: string, init: { method?: string; json?: unknown } = {}) =>
    fetchJson(`${gw.url}${path}`, { key, method: init.method ?? 'GET', ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }) });

beforeAll(async () => {
  provider = await startHttpTarget();
  attacker = await startHttpTarget();
  gw = await startTestGateway({ env: { FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' } });
  const { services } = gw.gateway;
  ({
    organization: { id: organizationId },
  } = await services.organizations.ensure('default'));
  const make = async (role: 'owner' | 'member') => {
    const { userId } = await addMember(gw, organizationId, privateKeyToAccount(generatePrivateKey()), role);
    return (await services.keys.create({ organizationId, userId, name: `${role} key`, scope: role === 'owner' ? 'mcp:admin' : 'mcp:write' })).key;
  };
  ownerKey = await make('owner');
  memberKey = await make('member');
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await provider?.close();
  await attacker?.close();
});

const attackerSaw = () => JSON.stringify(attacker.hits);

async function created(type: string, config: Record<string, unknown>): Promise<string> {
  const res = await as(ownerKey)('/api/integrations', { method: 'POST', json: { name: `${type} ${Math.random()}`, type, config } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

describe('moving an integration to another host', () => {
  it('refuses a member who changes apiBaseUrl without the bot token, names the field, and keeps the saved config', async () => {
    const id = await created('telegram', { botToken: BOT_TOKEN, chatId: 1, apiBaseUrl: provider.url });
    const before = attacker.hits.length;
    const res = await as(memberKey)(`/api/integrations/${id}`, { method: 'PUT', json: { config: { apiBaseUrl: attacker.url } } });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.error).toContain('config.apiBaseUrl');
    expect(res.body.issues).toEqual([expect.objectContaining({ path: 'config.botToken' })]);
    expect(attacker.hits.length).toBe(before);
    const saved = await getIntegrationForRun(gw.gateway.services, organizationId, id);
    expect(saved.config).toMatchObject({ apiBaseUrl: provider.url, botToken: BOT_TOKEN });

    // A field that does not move the requests needs no credential.
    const chat = await as(memberKey)(`/api/integrations/${id}`, { method: 'PUT', json: { config: { chatId: 2 } } });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    expect(chat.body.config).toEqual({ chatId: 2, apiBaseUrl: provider.url });
  });

  it('refuses a live test whose override moves the stored token, and sends nothing there', async () => {
    const id = await created('telegram', { botToken: BOT_TOKEN, apiBaseUrl: provider.url });
    const before = attacker.hits.length;
    const res = await as(memberKey)(`/api/integrations/${id}/test`, { method: 'POST', json: { configOverrides: { apiBaseUrl: attacker.url } } });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.issues).toEqual([expect.objectContaining({ path: 'config.botToken' })]);
    expect(attacker.hits.length).toBe(before);

    // With a token of their own the test goes where they said, carrying theirs, never the stored one.
    const own = await as(memberKey)(`/api/integrations/${id}/test`, {
      method: 'POST',
      json: { configOverrides: { apiBaseUrl: attacker.url, botToken: '1:member-token' } },
    });
    expect([200, 400], JSON.stringify(own.body)).toContain(own.status);
    expect(attacker.hits.length).toBe(before + 1);
    expect(attackerSaw()).toContain('member-token');
    expect(attackerSaw()).not.toContain(BOT_TOKEN);
  });

  it('applies to the owner too: a moved webhook url needs its headers again', async () => {
    const id = await created('webhook', { url: `${provider.url}/hook`, headers: { authorization: HEADER_TOKEN } });
    const moved = await as(ownerKey)(`/api/integrations/${id}`, { method: 'PUT', json: { config: { url: `${attacker.url}/hook` } } });
    expect(moved.status, JSON.stringify(moved.body)).toBe(400);
    expect(moved.body.issues).toEqual([expect.objectContaining({ path: 'config.headers' })]);
    const tested = await as(memberKey)(`/api/integrations/${id}/test`, { method: 'POST', json: { configOverrides: { url: `${attacker.url}/hook` } } });
    expect(tested.status).toBe(400);
    expect(attackerSaw()).not.toContain(HEADER_TOKEN);

    const retyped = await as(ownerKey)(`/api/integrations/${id}`, {
      method: 'PUT',
      json: { config: { url: `${attacker.url}/hook`, headers: { authorization: 'Bearer new' } } },
    });
    expect(retyped.status, JSON.stringify(retyped.body)).toBe(200);
    expect((await getIntegrationForRun(gw.gateway.services, organizationId, id)).config).toMatchObject({ url: `${attacker.url}/hook` });
  });

  it('covers a database host, port and connection string: the stored password stays with its server', async () => {
    const id = await created('database', { driver: 'postgres', host: '127.0.0.1', port: 5432, database: 'app', user: 'app', password: DB_PASSWORD });
    for (const change of [{ host: '127.0.0.2' }, { port: 6543 }, { connectionString: 'postgres://app@127.0.0.2/app' }]) {
      const res = await as(memberKey)(`/api/integrations/${id}`, { method: 'PUT', json: { config: change } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.issues).toEqual([expect.objectContaining({ path: 'config.password' })]);
    }
    const renamed = await as(memberKey)(`/api/integrations/${id}`, { method: 'PUT', json: { config: { database: 'app2' } } });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
  });
});
