import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type KeyScope } from '../tools/define.ts';
import { registry } from '../tools/index.ts';
import { KEY_RECHECK_MS } from '../src/auth/keys.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * The scope matrix over real HTTP and MCP. The spine's registry has no write
 * operations yet, so two probe tools at mcp:write and mcp:admin stand in for
 * the later families; they run through the same edges as every other tool.
 */
const probe = (scope: 'mcp:write' | 'mcp:admin', path: string) =>
  defineTool({
    name: `probe_${scope.replace('mcp:', '')}`,
    title: `Probe ${scope}`,
    description: `Needs ${scope}.`,
    scope,
    input: z.object({}),
    output: z.object({ ok: z.literal(true) }),
    rest: { method: 'POST', path },
    mcp: { annotations: {} },
    handler: () => ({ ok: true as const }),
  });

let gw: TestGateway;
const keys: Record<string, string> = {};

beforeAll(async () => {
  gw = await startTestGateway({ tools: [...registry, probe('mcp:write', '/api/test/write'), probe('mcp:admin', '/api/test/admin')] });
  keys.none = gw.ownerKey;
  for (const scope of ['mcp:read', 'mcp:write', 'mcp:admin'] as KeyScope[]) keys[scope] = await gw.createKey({ scope });
});
afterAll(() => gw.close());

async function mcpClient(key?: string) {
  const client = new Client({ name: 'auth-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), {
    requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : undefined,
  });
  await client.connect(transport);
  return client;
}

describe('GET /api/keys (auth probe)', () => {
  it('is 401 with WWW-Authenticate resource_metadata without a key', async () => {
    const res = await fetchJson(`${gw.url}/api/keys`);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gw.url}/.well-known/oauth-protected-resource"`);
  });

  it('is 401 for an unknown key and for a malformed header', async () => {
    expect((await fetchJson(`${gw.url}/api/keys`, { key: 'svc_notarealkey' })).status).toBe(401);
    const malformed = await fetchJson(`${gw.url}/api/keys`, { headers: { Authorization: 'Basic abc' } });
    expect(malformed.status).toBe(401);
    expect(malformed.body.error).toContain('Bearer');
  });

  it('stops honouring a key revoked in the database within the recheck interval, and a new key works at once', async () => {
    const key = await gw.createKey({ name: 'revoked soon' });
    expect((await fetchJson(`${gw.url}/api/keys`, { key })).status).toBe(200);
    const { store } = gw.gateway.services;
    await store.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('name', '=', 'revoked soon').execute();
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 4 * KEY_RECHECK_MS) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await fetchJson(`${gw.url}/api/keys`, { key })).status;
    }
    expect(status).toBe(401);
    expect((await fetchJson(`${gw.url}/api/keys`, { key: await gw.createKey({ name: 'fresh' }) })).status).toBe(200);
  });

  it('is 200 with organization and key details for every scope', async () => {
    for (const [scope, key] of Object.entries(keys)) {
      const res = await fetchJson(`${gw.url}/api/keys`, { key });
      expect(res.status, scope).toBe(200);
      expect(res.body.organization.slug).toBe('default');
      expect(res.body.key.scope).toBe(scope === 'none' ? null : scope);
      expect(key.startsWith(res.body.key.prefix)).toBe(true);
      expect(JSON.stringify(res.body)).not.toContain(key);
    }
  });

  it('scopes a key to its own organization', async () => {
    const other = await gw.createKey({ org: 'acme' });
    const res = await fetchJson(`${gw.url}/api/keys`, { key: other });
    expect(res.body.organization.slug).toBe('acme');
    const wallets = await Promise.all([other, keys.none!].map((k) => fetchJson(`${gw.url}/api/user/wallet`, { key: k })));
    expect(wallets[0]!.body.walletAddress).not.toBe(wallets[1]!.body.walletAddress);
  });
});

describe('user and wallet', () => {
  it('returns the user with the organization wallet address', async () => {
    const user = await fetchJson(`${gw.url}/api/user`, { key: keys['mcp:read'] });
    expect(user.status).toBe(200);
    expect(user.body).toMatchObject({ providerId: 'local', email: null });
    const wallet = await fetchJson(`${gw.url}/api/user/wallet`, { key: keys['mcp:read'] });
    expect(wallet.body.walletAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(wallet.body.solanaAddress).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(user.body.walletAddress).toBe(wallet.body.walletAddress);
  });

  it('refuses anonymous callers', async () => {
    expect((await fetchJson(`${gw.url}/api/user`)).status).toBe(401);
    expect((await fetchJson(`${gw.url}/api/user/wallet`)).status).toBe(401);
  });
});

describe('scope matrix over REST', () => {
  const expected: Record<string, { write: number; admin: number }> = {
    none: { write: 200, admin: 200 },
    'mcp:read': { write: 403, admin: 403 },
    'mcp:write': { write: 200, admin: 403 },
    'mcp:admin': { write: 200, admin: 200 },
  };
  for (const [scope, want] of Object.entries(expected)) {
    it(`key scope ${scope}`, async () => {
      const write = await fetchJson(`${gw.url}/api/test/write`, { method: 'POST', key: keys[scope] });
      const admin = await fetchJson(`${gw.url}/api/test/admin`, { method: 'POST', key: keys[scope] });
      expect([write.status, admin.status]).toEqual([want.write, want.admin]);
      if (write.status === 403)
        expect(write.body).toMatchObject({ error: 'insufficient_scope', code: 'insufficient_scope', required_scope: 'mcp:write', granted_scope: scope });
    });
  }

  it('anonymous callers get 401 on scoped routes and 200 on public ones', async () => {
    expect((await fetchJson(`${gw.url}/api/test/write`, { method: 'POST' })).status).toBe(401);
    expect((await fetchJson(`${gw.url}/api/features`)).status).toBe(401);
    expect((await fetchJson(`${gw.url}/api/chains`)).status).toBe(200);
    expect((await fetchJson(`${gw.url}/api/mcp/schemas`)).status).toBe(200);
  });
});

describe('scope matrix over MCP', () => {
  it('lists only the tools a caller may use', async () => {
    const names = async (key?: string) => {
      const client = await mcpClient(key);
      const { tools } = await client.listTools();
      await client.close();
      return tools.map((t) => t.name);
    };
    const anonymous = await names();
    expect(anonymous).toContain('list_chains');
    expect(anonymous).not.toContain('get_features');
    expect(anonymous).not.toContain('probe_write');

    const read = await names(keys['mcp:read']);
    expect(read).toContain('get_features');
    expect(read).not.toContain('probe_write');

    expect(await names(keys['mcp:write'])).toEqual(expect.arrayContaining(['probe_write']));
    expect(await names(keys['mcp:write'])).not.toContain('probe_admin');
    expect(await names(keys['mcp:admin'])).toEqual(expect.arrayContaining(['probe_write', 'probe_admin']));
    expect(await names(keys.none)).toEqual(expect.arrayContaining(['probe_write', 'probe_admin']));
  });

  it('answers a call beyond the scope with an isError insufficient_scope result', async () => {
    const client = await mcpClient(keys['mcp:read']);
    const result = await client.callTool({ name: 'probe_write', arguments: {} });
    await client.close();
    expect(result.isError).toBe(true);
    const body = JSON.parse((result.content as { text: string }[])[0]!.text);
    expect(body).toMatchObject({ error: 'insufficient_scope', required_scope: 'mcp:write', granted_scope: 'mcp:read' });
  });

  it('answers an invalid key at /mcp with 401 and WWW-Authenticate', async () => {
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { Authorization: 'Bearer svc_wrong', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata=');
  });
});
