import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, discoverAuthorizationServerMetadata, refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient } from './helpers/session.ts';
import { newSignedInUser } from './helpers/members.ts';
import { TestOAuthProvider } from './helpers/oauth.ts';
import { deleteExpiredRows } from '../src/store/expired-rows.ts';

/**
 * Anyone can send /authorize a client_id that is a URL: the gateway fetches
 * that metadata document and keeps the client in oauth_clients. So /authorize
 * is limited per IP (FLOWGATE_RATE_LIMIT_OAUTH_AUTHORIZE_PER_IP: past it,
 * nothing is fetched), and cached metadata-document clients, like registered
 * clients that never completed a flow, are deleted by the expired-rows sweep
 * once expired; registered clients with a grant stay and keep working, and
 * so do metadata-document clients with a live grant (/token never fetches).
 */

const gateways: TestGateway[] = [];
let documentHost: net.Server;
/** Connections the gateway opened to fetch a metadata document (each is refused at TLS: no certificate here). */
let fetches = 0;

beforeAll(async () => {
  documentHost = net.createServer((socket) => {
    fetches += 1;
    socket.on('error', () => {});
    socket.destroy();
  });
  await new Promise<void>((resolve) => documentHost.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const gw of gateways) await gw.close().catch(() => {});
  documentHost?.close();
});

async function gateway(env: Record<string, string>) {
  const gw = await startTestGateway({ env });
  gateways.push(gw);
  return gw;
}

function authorizeUrl(gw: TestGateway, clientId: string) {
  const url = new URL(`${gw.url}/authorize`);
  const params = {
    client_id: clientId,
    redirect_uri: 'https://app.example/cb',
    response_type: 'code',
    code_challenge: 'x'.repeat(43),
    code_challenge_method: 'S256',
    state: 'abc',
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

describe('/authorize per-IP limit', () => {
  it('answers 429 with Retry-After past the bound, and fetches nothing more', async () => {
    const gw = await gateway({ FLOWGATE_RATE_LIMIT_OAUTH_AUTHORIZE_PER_IP: '3', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' });
    const port = (documentHost.address() as net.AddressInfo).port;
    const anonymous = browserClient(gw.url);
    const attempt = () => anonymous.fetch(authorizeUrl(gw, `https://127.0.0.1:${port}/clients/${Math.random().toString(36).slice(2)}`), { redirect: 'manual' });
    fetches = 0;
    for (let i = 0; i < 3; i++) {
      const res = await attempt();
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_client');
      expect(res.body.error_description).toMatch(/could not be fetched/);
    }
    expect(fetches).toBe(3);

    const limited = await attempt();
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('too_many_requests');
    expect(limited.body.error_description).toMatch(/retry after \d+ s/);
    expect(limited.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(limited.headers.get('x-ratelimit-limit')).toBe('3');
    // A registered client's request from the same address waits too; nothing was fetched for the refused ones.
    expect((await anonymous.fetch(authorizeUrl(gw, 'some-registered-client'), { redirect: 'manual' })).status).toBe(429);
    expect(fetches).toBe(3);

    // The limit is declared with the others.
    const openapi = await fetchJson(`${gw.url}/openapi.json`);
    expect(openapi.body['x-rate-limits']).toContainEqual(
      expect.objectContaining({ name: 'oauthAuthorizePerIp', variable: 'FLOWGATE_RATE_LIMIT_OAUTH_AUTHORIZE_PER_IP', limit: 3, windowSeconds: 3600 }),
    );
  });

  it('FLOWGATE_RATE_LIMITS=off lifts it', async () => {
    const gw = await gateway({ FLOWGATE_RATE_LIMIT_OAUTH_AUTHORIZE_PER_IP: '1', FLOWGATE_RATE_LIMITS: 'off' });
    for (let i = 0; i < 3; i++) {
      expect((await fetchJson(authorizeUrl(gw, 'https://127.0.0.1/clients/x'), { redirect: 'manual' })).status).toBe(400);
    }
  });
});

describe('expired OAuth clients', () => {
  it('stale metadata-document clients and unused registrations are swept; a registered client with a grant stays and refreshes', async () => {
    const gw = await gateway({ FLOWGATE_RATE_LIMIT_OAUTH_REGISTER_PER_IP: '1000', FLOWGATE_RATE_LIMIT_OAUTH_TOKEN_PER_IP: '1000' });
    const store = gw.gateway.services.store;
    const owner = await newSignedInUser(gw);
    const mcpUrl = new URL(`${gw.url}/mcp`);

    // A client that completed a flow (registered, with a grant), and one that registered and never did.
    const connected = new TestOAuthProvider(owner.client, { clientName: 'Kept' });
    expect(await auth(connected, { serverUrl: mcpUrl })).toBe('REDIRECT');
    expect(await auth(connected, { serverUrl: mcpUrl, authorizationCode: connected.code() })).toBe('AUTHORIZED');
    const abandoned = new TestOAuthProvider(undefined, { clientName: 'Abandoned' });
    expect(await auth(abandoned, { serverUrl: mcpUrl })).toBe('REDIRECT');
    const keptId = connected.client!.client_id;
    const abandonedId = abandoned.client!.client_id;

    const DAY = 86_400_000;
    const isoFromNow = (ms: number) => new Date(Date.now() + ms).toISOString();
    // Metadata-document clients as /authorize caches them (src/auth/oauth/clients.ts getClient): one fetched two
    // days ago and never asked for since, one an hour past its refresh time, one fresh.
    const cached = (clientId: string, expiresIn: number) => ({
      client_id: clientId,
      secret_hash: null,
      metadata: JSON.stringify({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none' }),
      source: 'metadata_document' as const,
      created_at: isoFromNow(expiresIn - 60 * 60 * 1000),
      expires_at: isoFromNow(expiresIn),
    });
    await store
      .insertInto('oauth_clients')
      .values([
        cached('https://attacker.example/stale', -2 * DAY),
        cached('https://app.example/lately.json', -60 * 60 * 1000),
        cached('https://app.example/fresh.json', 30 * 60 * 1000),
      ])
      .execute();
    await store
      .updateTable('oauth_clients')
      .set({ expires_at: isoFromNow(-2 * DAY) })
      .where('client_id', '=', abandonedId)
      .execute();
    // A grant with a live session does not age its client: a registered client with a grant has no expiry.
    expect((await store.selectFrom('oauth_clients').select('expires_at').where('client_id', '=', keptId).executeTakeFirstOrThrow()).expires_at).toBeNull();

    const deleted = await deleteExpiredRows(store);
    expect(deleted.oauth_clients).toBe(2);
    const left = (await store.selectFrom('oauth_clients').select('client_id').execute()).map((r) => r.client_id).sort();
    expect(left).toEqual([keptId, 'https://app.example/fresh.json', 'https://app.example/lately.json'].sort());

    // The kept client still works: its refresh token is exchanged and the new access token is accepted on /mcp.
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const tokens = await refreshAuthorization(gw.url, {
      metadata,
      clientInformation: connected.client!,
      refreshToken: connected.saved!.refresh_token!,
      resource: mcpUrl,
    });
    const tools = await fetchJson(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(tools.status).toBe(200);
  });

  it('a metadata-document client with a grant keeps its row past expiry and refreshes without a fetch', async () => {
    const gw = await gateway({ FLOWGATE_RATE_LIMIT_OAUTH_TOKEN_PER_IP: '1000' });
    const store = gw.gateway.services.store;
    const owner = await newSignedInUser(gw);
    const mcpUrl = new URL(`${gw.url}/mcp`);
    // As /authorize caches a fetched document (no TLS here to fetch one): fresh, so this flow fetches nothing.
    const clientId = 'https://app.example/granted.json';
    await store
      .insertInto('oauth_clients')
      .values({
        client_id: clientId,
        secret_hash: null,
        metadata: JSON.stringify({ redirect_uris: ['http://127.0.0.1:53682/callback'], token_endpoint_auth_method: 'none', client_name: 'Granted' }),
        source: 'metadata_document',
        created_at: new Date().toISOString(),
        expires_at: new Date(Date.now() + 30 * 60 * 1000).toISOString(),
      })
      .execute();
    class DocumentClient extends TestOAuthProvider {
      get clientMetadataUrl() {
        return clientId;
      }
    }
    const connected = new DocumentClient(owner.client);
    expect(await auth(connected, { serverUrl: mcpUrl })).toBe('REDIRECT');
    expect(await auth(connected, { serverUrl: mcpUrl, authorizationCode: connected.code() })).toBe('AUTHORIZED');

    // Two days past the cache's hour: the sweep keeps the row of a client with a live grant...
    await store
      .updateTable('oauth_clients')
      .set({ expires_at: new Date(Date.now() - 2 * 86_400_000).toISOString() })
      .where('client_id', '=', clientId)
      .execute();
    await deleteExpiredRows(store);
    expect(await store.selectFrom('oauth_clients').select('client_id').where('client_id', '=', clientId).executeTakeFirst()).toBeDefined();
    // ...and /token, which never fetches (app.example would not answer), refreshes from it.
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const tokens = await refreshAuthorization(gw.url, {
      metadata,
      clientInformation: connected.client!,
      refreshToken: connected.saved!.refresh_token!,
      resource: mcpUrl,
    });
    expect(tokens.access_token).toMatch(/^fgat_/);
  });
});
