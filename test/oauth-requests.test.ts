import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, discoverAuthorizationServerMetadata, registerClient, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { newSignedInUser, type SignedInUser } from './helpers/members.ts';
import { TestOAuthProvider } from './helpers/oauth.ts';

/**
 * What the OAuth endpoints make of requests a client gets slightly wrong or
 * sends at once: a refresh asking for less scope, codes raced, malformed PKCE,
 * a missing redirect_uri, a refused form post, a misleading client_name, and
 * what GET /api/keys says of a token. Each through the real endpoints of a
 * started gateway, with the MCP SDK client where it is the one sending.
 */

let gw: TestGateway;
let owner: SignedInUser;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_OAUTH_REGISTER_PER_IP: '1000', FLOWGATE_RATE_LIMIT_OAUTH_TOKEN_PER_IP: '1000' } });
  owner = await newSignedInUser(gw);
});
afterAll(async () => gw?.close());

const mcpUrl = () => new URL(`${gw.url}/mcp`);
const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});
const token = (fields: Record<string, string>) => fetchJson(`${gw.url}/token`, form(fields));
const credentials = ({ client }: TestOAuthProvider) => ({ client_id: client!.client_id, client_secret: client!.client_secret! });
const mcp = (bearer: string, method: string, params: object = {}) =>
  fetchJson(`${gw.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
const toolNames = async (bearer: string) => ((await mcp(bearer, 'tools/list')).body.result?.tools ?? []).map((t: { name: string }) => t.name);

async function authorize(serverUrl: URL, options: ConstructorParameters<typeof TestOAuthProvider>[1] = {}) {
  const provider = new TestOAuthProvider(owner.client, options);
  expect(await auth(provider, { serverUrl, scope: options.scope })).toBe('REDIRECT');
  expect(await auth(provider, { serverUrl, authorizationCode: provider.code() })).toBe('AUTHORIZED');
  return provider;
}

/** A consented authorization request whose code is not exchanged yet. */
async function pendingCode() {
  const provider = new TestOAuthProvider(owner.client);
  expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
  return { provider, code: provider.code() };
}

describe('a refresh asking for a narrower scope (RFC 6749 §6)', () => {
  it('gets an access token of that scope only; the refresh token keeps the grant', async () => {
    const connected = await authorize(new URL(gw.url));
    expect(connected.saved!.scope).toBe('mcp:admin');
    const narrowed = await token({ grant_type: 'refresh_token', refresh_token: connected.saved!.refresh_token!, scope: 'mcp:read', ...credentials(connected) });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(narrowed.body.scope).toBe('mcp:read');
    const reader = narrowed.body.access_token as string;

    // Over MCP: read tools only; a write tool is refused.
    const names = await toolNames(reader);
    expect(names).toContain('list_workflows');
    expect(names).not.toContain('execute_workflow');
    expect(names).not.toContain('list_api_keys');
    const call = await mcp(reader, 'tools/call', { name: 'execute_workflow', arguments: { workflowId: 'x'.repeat(21) } });
    expect(JSON.stringify(call.body)).toContain('insufficient_scope');
    // Over REST: reads work, a write route is 403.
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: reader })).status).toBe(200);
    const write = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key: reader, body: JSON.stringify({ name: 'x', nodes: [], edges: [] }) });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ code: 'insufficient_scope', granted_scope: 'mcp:read' });
    expect(write.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="${gw.url}/.well-known/oauth-protected-resource"`,
    );
    // The probe says so too.
    expect((await fetchJson(`${gw.url}/api/keys`, { key: reader })).body.key.scope).toBe('mcp:read');

    // The next refresh without a scope is back to what the user granted.
    const widened = await token({ grant_type: 'refresh_token', refresh_token: narrowed.body.refresh_token, ...credentials(connected) });
    expect(widened.status).toBe(200);
    expect(widened.body.scope).toBe('mcp:admin');
    expect(await toolNames(widened.body.access_token)).toContain('list_api_keys');
  });
});

/**
 * POSTs every body at once: each request is sent whole but its last byte, then every last byte goes in the same
 * tick, so the gateway starts them together (as a client retrying over several connections would have them land).
 */
async function simultaneousPosts(url: string, bodies: string[]): Promise<{ status: number; body: any }[]> {
  const requests = bodies.map((body) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) },
    });
    const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
    });
    req.write(body.slice(0, -1));
    return { req, answer, last: body.slice(-1) };
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (const { req, last } of requests) req.end(last);
  return Promise.all(requests.map((r) => r.answer));
}

describe('an authorization code sent several times at once', () => {
  it('is spent once, and the losing replays revoke what the winner got', async () => {
    const { provider, code } = await pendingCode();
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: provider.verifier,
      redirect_uri: provider.redirectUrl,
      resource: `${gw.url}/mcp`,
      ...credentials(provider),
    }).toString();
    const answers = await simultaneousPosts(`${gw.url}/token`, [body, body, body]);
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    expect(answers.filter((a) => a.status === 400).map((a) => a.body.error)).toEqual(['invalid_grant', 'invalid_grant']);
    expect((await mcp(won[0]!.body.access_token, 'tools/list')).status).toBe(401);
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: won[0]!.body.refresh_token, ...credentials(provider) });
    expect(refreshed.body.error).toBe('invalid_grant');
  });
});

describe('PKCE syntax (RFC 7636)', () => {
  it('/authorize refuses a code_challenge that is no S256 value, back to the client with state', async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const provider = new TestOAuthProvider(owner.client);
    const client = await registerClient(gw.url, { metadata, clientMetadata: provider.clientMetadata });
    const { authorizationUrl } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: client,
      redirectUrl: provider.redirectUrl,
      state: 'pkce-1',
      resource: mcpUrl(),
    });
    for (const challenge of ['', 'a'.repeat(42), `${'a'.repeat(42)}=`, 'a'.repeat(44)]) {
      authorizationUrl.searchParams.set('code_challenge', challenge);
      const res = await owner.client.fetch(authorizationUrl.href, { redirect: 'manual' });
      expect(res.status, challenge).toBe(302);
      const location = new URL(res.headers.get('location')!);
      expect(location.origin + location.pathname).toBe(provider.redirectUrl);
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('error_description')).toContain('code_challenge');
      expect(location.searchParams.get('state')).toBe('pkce-1');
    }
  });

  it('/token refuses a malformed code_verifier as invalid_request, and the code stays usable', async () => {
    const { provider, code } = await pendingCode();
    const exchange = (codeVerifier: string) =>
      token({ grant_type: 'authorization_code', code, code_verifier: codeVerifier, redirect_uri: provider.redirectUrl, ...credentials(provider) });
    for (const verifier of ['a', 'a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(43)}+`]) {
      const refused = await exchange(verifier);
      expect(refused.status, verifier).toBe(400);
      expect(refused.body.error).toBe('invalid_request');
      expect(refused.body.error_description).toContain('code_verifier must be 43 to 128 characters');
    }
    expect((await exchange(provider.verifier)).status).toBe(200);
  });
});

describe('redirect_uri at /token (RFC 6749 §4.1.3)', () => {
  it('is required, and identical, when the authorization request carried one', async () => {
    const { provider, code } = await pendingCode();
    const base = { grant_type: 'authorization_code', code, code_verifier: provider.verifier, ...credentials(provider) };
    const missing = await token(base);
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'invalid_request' });
    expect(missing.body.error_description).toContain(`redirect_uri is required`);
    const other = await token({ ...base, redirect_uri: 'http://127.0.0.1:53682/elsewhere' });
    expect(other.body.error).toBe('invalid_grant');
    expect((await token({ ...base, redirect_uri: provider.redirectUrl })).status).toBe(200);
  });

  it('may be left out when the authorization request left it out too', async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const provider = new TestOAuthProvider(owner.client);
    provider.client = await registerClient(gw.url, { metadata, clientMetadata: provider.clientMetadata });
    const { authorizationUrl, codeVerifier } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: provider.client,
      redirectUrl: provider.redirectUrl,
      state: provider.stateValue,
      resource: mcpUrl(),
    });
    // The client's only registered redirect URI is implied.
    authorizationUrl.searchParams.delete('redirect_uri');
    await provider.redirectToAuthorization(authorizationUrl);
    const res = await token({ grant_type: 'authorization_code', code: provider.code(), code_verifier: codeVerifier, ...credentials(provider) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

describe('a refused authorization request sent as a form post', () => {
  it('comes back to the redirect URI with its state', async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const provider = new TestOAuthProvider(owner.client);
    const client = await registerClient(gw.url, { metadata, clientMetadata: provider.clientMetadata });
    const res = await owner.client.fetch('/authorize', {
      ...form({
        client_id: client.client_id,
        redirect_uri: provider.redirectUrl,
        response_type: 'code',
        code_challenge: 'a'.repeat(43),
        code_challenge_method: 'plain',
        state: 'posted-state',
      }),
      redirect: 'manual',
    });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe('posted-state');
  });
});

describe('client_name at registration', () => {
  const register = (client_name: string) =>
    fetchJson(`${gw.url}/register`, { method: 'POST', body: JSON.stringify({ client_name, redirect_uris: ['https://app.example/cb'] }) });

  it('refuses names that would mislead on the consent page, naming the field', async () => {
    for (const [name, why] of [
      ['x'.repeat(101), 'at most 100 characters'],
      ['y'.repeat(90_000), 'at most 100 characters'],
      ['Trusted \u202Etxt.exe', 'format'],
      ['Trusted\u2066 Client', 'format'],
      ['Zero\u200Bwidth', 'format'],
      ['Bell\u0007', 'control'],
      [`Trusted${'\u00A0'.repeat(3000)}Evil`, 'at most 100 characters'],
      [`Trusted${'\u00A0'.repeat(40)}Evil`, 'single plain spaces'],
      [`${'\u00A0'.repeat(3000)}Padded`, 'single plain spaces'],
      ['Two  spaces', 'single plain spaces'],
      ['Tab\tbed', 'control'],
    ]) {
      const res = await register(name!);
      expect(res.status, JSON.stringify(name!.slice(0, 40))).toBe(400);
      expect(res.body.error).toBe('invalid_client_metadata');
      expect(res.body.error_description).toMatch(/^client_name /);
      expect(res.body.error_description).toContain(why);
    }
  });

  it('accepts ordinary names, accents and all', async () => {
    for (const name of ['Desktop Assistant', 'Café Connector 2', 'x'.repeat(100), '  Trimmed  '.trim(), '日本語のクライアント']) {
      expect((await register(name)).status, name).toBe(201);
    }
  });
});

describe('GET /api/keys with an OAuth access token', () => {
  it('answers 200 describing the token (its client, scope and organization); a key is described as before', async () => {
    const connected = await authorize(new URL(gw.url), { clientName: 'Probe Client', scope: 'mcp:write' });
    const probe = await fetchJson(`${gw.url}/api/keys`, { key: connected.saved!.access_token });
    expect(probe.status, JSON.stringify(probe.body)).toBe(200);
    expect(probe.body).toMatchObject({
      valid: true,
      organization: { id: owner.ownOrganizationId },
      key: { kind: 'oauth_token', name: 'Probe Client', prefix: 'fgat_', scope: 'mcp:write', id: expect.any(String), createdAt: expect.any(String) },
    });
    const grants = await owner.client.fetch('/api/oauth/clients');
    expect(grants.body.map((g: { id: string }) => g.id)).toContain(probe.body.key.id);

    const key = await fetchJson(`${gw.url}/api/keys`, { key: gw.ownerKey });
    expect(key.status).toBe(200);
    expect(key.body.key).not.toHaveProperty('kind');
    expect(key.body.key.prefix).toMatch(/^svc_/);

    // Revoked, the token is refused like any dead credential.
    await owner.client.fetch(`/api/oauth/clients/${probe.body.key.id}`, { method: 'DELETE' });
    expect((await fetchJson(`${gw.url}/api/keys`, { key: connected.saved!.access_token })).status).toBe(401);
  });

  it('answers a token issued for /mcp too (the default resource), which serves no other REST route', async () => {
    const connected = await authorize(mcpUrl(), { clientName: 'MCP Probe' });
    const token = connected.saved!.access_token;
    const probe = await fetchJson(`${gw.url}/api/keys`, { key: token });
    expect(probe.status, JSON.stringify(probe.body)).toBe(200);
    expect(probe.body.key).toMatchObject({ kind: 'oauth_token', name: 'MCP Probe' });
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: token })).status).toBe(401);
  });
});

describe('an error at /authorize for a client nobody has authorized yet (RFC 9700 §4.11.2)', () => {
  it("is shown on the gateway, not sent to the registrant's https redirect URI; once a user granted the client, it is sent back", async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const provider = new TestOAuthProvider(owner.client, { redirectUrl: 'https://phish.example/cb' });
    const client = await registerClient(gw.url, { metadata, clientMetadata: provider.clientMetadata });
    const { authorizationUrl } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: client,
      redirectUrl: provider.redirectUrl,
      state: 'or-1',
      resource: mcpUrl(),
    });
    authorizationUrl.searchParams.set('code_challenge_method', 'plain');
    // Anyone's browser following a link: before, a 302 to phish.example with no interaction, from the gateway's origin.
    const res = await fetch(authorizationUrl.href, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('code_challenge_method');

    // A user grants the client: from then on that user's own errors go back to it, with state (RFC 6749 §4.1.2.1).
    provider.client = client;
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
    expect(provider.landed!.origin).toBe('https://phish.example');
    // Anyone else's browser still sees the error here: one grant, by its registrant say, proves nothing to others.
    expect((await fetch(authorizationUrl.href, { redirect: 'manual' })).status).toBe(400);
    const stranger = await newSignedInUser(gw);
    expect((await stranger.client.fetch(authorizationUrl.href, { redirect: 'manual' })).status).toBe(400);
    const again = await owner.client.fetch(authorizationUrl.href, { redirect: 'manual' });
    expect(again.status).toBe(302);
    const location = new URL(again.headers.get('location')!);
    expect(location.origin).toBe('https://phish.example');
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe('or-1');
  });
});

describe('token_endpoint_auth_method at registration', () => {
  it('takes the methods the server metadata advertises and refuses the others, which could never authenticate at /token', async () => {
    const metadata = (await fetchJson(`${gw.url}/.well-known/oauth-authorization-server`)).body;
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(['none', 'client_secret_post']);
    const register = (method: string) =>
      fetchJson(`${gw.url}/register`, {
        method: 'POST',
        body: JSON.stringify({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: method }),
      });
    for (const method of ['private_key_jwt', 'client_secret_basic', 'tls_client_auth']) {
      const res = await register(method);
      expect(res.status, method).toBe(400);
      expect(res.body.error).toBe('invalid_client_metadata');
      expect(res.body.error_description).toContain(`"${method}" is not supported`);
    }
    for (const method of metadata.token_endpoint_auth_methods_supported as string[]) expect((await register(method)).status, method).toBe(201);
  });
});
