import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  auth,
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  refreshAuthorization,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn, type BrowserClient } from './helpers/session.ts';
import { addMember, newSignedInUser, switchTo, type SignedInUser } from './helpers/members.ts';
import { consentHandle, TestOAuthProvider } from './helpers/oauth.ts';
import { tokenHash } from '../src/auth/tokens.ts';

/**
 * OAuth 2.1 for MCP clients, end to end: the MCP SDK client's own OAuth
 * support against a started gateway, the consent page driven through its
 * real form endpoint by a signed-in browser client.
 */

let gw: TestGateway;
let owner: SignedInUser;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_OAUTH_REGISTER_PER_IP: '1000', FLOWGATE_RATE_LIMIT_OAUTH_TOKEN_PER_IP: '1000' } });
  owner = await newSignedInUser(gw);
});
afterAll(async () => gw?.close());

const mcpUrl = () => new URL(`${gw.url}/mcp`);

async function connectWith(provider: TestOAuthProvider, url: URL): Promise<Client> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  return client;
}

/** The whole authorization: discovery, registration, consent, code for tokens. */
async function authorize(browser: BrowserClient, serverUrl: URL, options: ConstructorParameters<typeof TestOAuthProvider>[1] = {}) {
  const provider = new TestOAuthProvider(browser, options);
  expect(await auth(provider, { serverUrl, scope: options.scope })).toBe('REDIRECT');
  expect(await auth(provider, { serverUrl, authorizationCode: provider.code() })).toBe('AUTHORIZED');
  return provider;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** What a registered client sends to /token to identify itself. */
const clientCredentials = ({ client }: TestOAuthProvider): Record<string, string> => ({
  client_id: client!.client_id,
  ...('client_secret' in client! && client.client_secret ? { client_secret: client.client_secret } : {}),
});
const listTools = (path: string, token: string) =>
  fetchJson(`${gw.url}${path}`, {
    method: 'POST',
    headers: { ...bearer(token), accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

describe('discovery', () => {
  it('the authorization server and every protected resource are discoverable', async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    expect(metadata).toMatchObject({
      issuer: gw.url,
      authorization_endpoint: `${gw.url}/authorize`,
      token_endpoint: `${gw.url}/token`,
      registration_endpoint: `${gw.url}/register`,
      revocation_endpoint: `${gw.url}/revoke`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      client_id_metadata_document_supported: true,
    });
    for (const [path, resource] of [
      ['', gw.url],
      ['/mcp', `${gw.url}/mcp`],
      ['/mcp/w/helloworld', `${gw.url}/mcp/w/helloworld`],
    ]) {
      const { status, body } = await fetchJson(`${gw.url}/.well-known/oauth-protected-resource${path}`);
      expect(status, path).toBe(200);
      expect(body).toMatchObject({ resource, authorization_servers: [gw.url], scopes_supported: ['mcp:read', 'mcp:write', 'mcp:admin'] });
    }
    expect((await fetchJson(`${gw.url}/.well-known/oauth-protected-resource/mcp/w/no-such-workflow`)).status).toBe(404);
  });

  it('a 401 from /mcp and /mcp/w/<slug> points to the metadata of that exact path', async () => {
    for (const path of ['/mcp', '/mcp/w/helloworld']) {
      const res = await listTools(path, 'svc_not_a_key');
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gw.url}/.well-known/oauth-protected-resource${path}"`);
    }
  });
});

describe('the MCP SDK client connects by signing in', () => {
  let provider: TestOAuthProvider;

  it('runs discovery, registration, consent and token exchange, then lists and calls tools on /mcp', async () => {
    provider = new TestOAuthProvider(owner.client, { clientName: 'Desktop Assistant' });
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
    // The consent page names the client, where it sends the user back, the scopes, the organization and the resource.
    const html = provider.consent!.html;
    expect(provider.consent!.status).toBe(200);
    expect(html).toContain('Desktop Assistant');
    expect(html).toContain('127.0.0.1:53682');
    expect(html).toContain('mcp:admin');
    expect(html).toContain(`${gw.url}/mcp`);
    expect(html).toMatch(/Acting for<\/dt><dd id="organization">[^<]+\(<code>[a-z0-9-]+<\/code>\)/);
    // Registration: the client got a secret (client_secret_post), stored by the gateway only as a digest.
    const clientId = provider.client!.client_id;
    const stored = await gw.gateway.services.store.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirstOrThrow();
    expect(stored.secret_hash).toBe(tokenHash(provider.client!.client_secret!));
    expect(stored.metadata).not.toContain(provider.client!.client_secret!);

    expect(await auth(provider, { serverUrl: mcpUrl(), authorizationCode: provider.code() })).toBe('AUTHORIZED');
    expect(provider.saved).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp:admin' });
    expect(provider.saved!.access_token).toMatch(/^fgat_/);
    expect(provider.saved!.refresh_token).toMatch(/^fgrt_/);

    const client = await connectWith(provider, mcpUrl());
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('list_workflows');
    expect(names).toContain('revoke_oauth_client');
    const listed = await client.callTool({ name: 'list_oauth_clients', arguments: {} });
    expect(listed.isError).toBeFalsy();
    expect((listed.structuredContent as any).clients).toEqual([
      expect.objectContaining({ clientId, clientName: 'Desktop Assistant', scope: 'mcp:admin', resource: `${gw.url}/mcp`, userId: owner.userId }),
    ]);
    await client.close();
  });

  it('refresh rotates the refresh token and the new access token works', async () => {
    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('AUTHORIZED');
    const after = provider.saved!;
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.refresh_token).not.toBe(before.refresh_token);
    expect((await listTools('/mcp', after.access_token)).status).toBe(200);

    // The old refresh token again: reuse, which revokes the whole grant (the fresh access token too).
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    await expect(
      refreshAuthorization(gw.url, { metadata, clientInformation: provider.client!, refreshToken: before.refresh_token!, resource: mcpUrl() }),
    ).rejects.toBeInstanceOf(InvalidGrantError);
    const refused = await listTools('/mcp', after.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", resource_metadata="${gw.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    await expect(
      refreshAuthorization(gw.url, { metadata, clientInformation: provider.client!, refreshToken: after.refresh_token!, resource: mcpUrl() }),
    ).rejects.toBeInstanceOf(InvalidGrantError);
  });

  it('connects to a workflow server /mcp/w/<slug> with a token bound to it, refused on other resources', async () => {
    const url = new URL(`${gw.url}/mcp/w/helloworld`);
    const workflow = await authorize(owner.client, url);
    expect(workflow.consent!.html).toContain(`${gw.url}/mcp/w/helloworld`);
    const client = await connectWith(workflow, url);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['helloworld']);
    const result = await client.callTool({ name: 'helloworld', arguments: {} });
    expect(result.structuredContent).toMatchObject({ status: 'success' });
    await client.close();

    const token = workflow.saved!.access_token;
    for (const path of ['/mcp', '/mcp/w/agent-task']) {
      const res = await listTools(path, token);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer error="invalid_token", resource_metadata="${gw.url}/.well-known/oauth-protected-resource${path}"`,
      );
      expect(res.body.error).toContain(`issued for resource ${gw.url}/mcp/w/helloworld`);
    }
    expect((await fetchJson(`${gw.url}/api/workflows`, { headers: bearer(token) })).status).toBe(401);
  });

  it('a token for the REST API (the base URL) is accepted on REST like an organization key of its scope', async () => {
    const rest = await authorize(owner.client, new URL(gw.url), { scope: 'mcp:read' });
    const token = rest.saved!.access_token;
    expect(rest.saved!.scope).toBe('mcp:read');
    expect((await fetchJson(`${gw.url}/api/workflows`, { headers: bearer(token) })).status).toBe(200);
    const write = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      headers: bearer(token),
      body: JSON.stringify({ name: 'x', nodes: [], edges: [] }),
    });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('insufficient_scope');
  });

  it('revocation by the user takes effect at once and both grant and revocation are audited', async () => {
    const connected = await authorize(owner.client, mcpUrl());
    const token = connected.saved!.access_token;
    expect((await listTools('/mcp', token)).status).toBe(200);
    const grants = await owner.client.fetch('/api/oauth/clients');
    const grant = grants.body.find((g: any) => g.clientId === connected.client!.client_id);
    // Another organization's admin can neither see nor revoke it.
    const stranger = await newSignedInUser(gw);
    expect((await stranger.client.fetch('/api/oauth/clients')).body).toEqual([]);
    const foreign = await stranger.client.fetch(`/api/oauth/clients/${grant.id}`, { method: 'DELETE' });
    expect(foreign.status).toBe(404);
    expect((await listTools('/mcp', token)).status).toBe(200);
    const revoked = await owner.client.fetch(`/api/oauth/clients/${grant.id}`, { method: 'DELETE' });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: grant.id, revokedAt: expect.any(String) });
    expect((await listTools('/mcp', token)).status).toBe(401);
    await expect(auth(new TestOAuthProvider(undefined), { serverUrl: mcpUrl() })).resolves.toBe('REDIRECT');
    const audit = await owner.client.fetch('/api/audit-log');
    const actions = audit.body.rows.filter((e: any) => e.target === grant.id).map((e: any) => e.action);
    expect(actions.sort()).toEqual(['oauth_grant_created', 'oauth_grant_revoked']);
  });

  it('an admin revokes a connected client through the MCP tool; RFC 7009 /revoke ends a token', async () => {
    const connected = await authorize(owner.client, mcpUrl());
    const admin = await connectWith(connected, mcpUrl());
    const other = await authorize(owner.client, mcpUrl(), { clientName: 'Other Connector' });
    const list = await admin.callTool({ name: 'list_oauth_clients', arguments: {} });
    const grant = (list.structuredContent as any).clients.find((c: any) => c.clientName === 'Other Connector');
    const result = await admin.callTool({ name: 'revoke_oauth_client', arguments: { grantId: grant.id } });
    expect(result.isError).toBeFalsy();
    expect((await listTools('/mcp', other.saved!.access_token)).status).toBe(401);
    await admin.close();

    // The client revokes its own access token at the revocation endpoint.
    const body = new URLSearchParams({
      token: connected.saved!.access_token,
      client_id: connected.client!.client_id,
      client_secret: connected.client!.client_secret!,
    });
    const res = await fetch(`${gw.url}/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    expect(res.status).toBe(200);
    expect((await listTools('/mcp', connected.saved!.access_token)).status).toBe(401);
    const audit = await owner.client.fetch('/api/audit-log?action=oauth_token_revoked');
    expect(audit.body.rows).toEqual([expect.objectContaining({ action: 'oauth_token_revoked', actor: expect.objectContaining({ kind: 'oauth_client' }) })]);
  });
});

describe('refusals', () => {
  async function pendingCode(browser: BrowserClient, options: ConstructorParameters<typeof TestOAuthProvider>[1] = {}) {
    const provider = new TestOAuthProvider(browser, options);
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
    return { provider, code: provider.code(), metadata: await discoverAuthorizationServerMetadata(gw.url) };
  }

  it('a wrong PKCE verifier', async () => {
    const { provider, code, metadata } = await pendingCode(owner.client);
    const exchange = (codeVerifier: string) =>
      exchangeAuthorization(gw.url, {
        metadata,
        clientInformation: provider.client!,
        authorizationCode: code,
        codeVerifier,
        redirectUri: provider.redirectUrl,
        resource: mcpUrl(),
      });
    await expect(exchange('x'.repeat(64))).rejects.toThrow(/code_verifier does not match/);
    // The right one still works: a guess does not burn the code.
    await expect(exchange(provider.verifier)).resolves.toMatchObject({ token_type: 'Bearer' });
  });

  it('a reused code is refused and revokes what the first use got', async () => {
    const { provider, code, metadata } = await pendingCode(owner.client);
    const exchange = () =>
      exchangeAuthorization(gw.url, {
        metadata,
        clientInformation: provider.client!,
        authorizationCode: code,
        codeVerifier: provider.verifier,
        redirectUri: provider.redirectUrl,
        resource: mcpUrl(),
      });
    const first = await exchange();
    expect((await listTools('/mcp', first.access_token)).status).toBe(200);
    await expect(exchange()).rejects.toBeInstanceOf(InvalidGrantError);
    expect((await listTools('/mcp', first.access_token)).status).toBe(401);
  });

  it('an organization key presented at the token endpoint fails client authentication (SPEC Authentication rule 1)', async () => {
    const { provider, code } = await pendingCode(owner.client);
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: provider.verifier,
      client_id: provider.client!.client_id,
      client_secret: gw.ownerKey,
    });
    const res = await fetch(`${gw.url}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_client', error_description: 'Invalid client_secret' });
  });

  it('a redirect URI that was not registered', async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const client = await registerClient(gw.url, { metadata, clientMetadata: new TestOAuthProvider(undefined).clientMetadata });
    const { authorizationUrl } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: client,
      redirectUrl: 'https://evil.example/callback',
      resource: mcpUrl(),
    });
    const res = await owner.client.fetch(authorizationUrl.href, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', error_description: 'Unregistered redirect_uri' });
  });

  it('registration refuses plain-http redirect URIs except loopback, and the implicit flow', async () => {
    for (const clientMetadata of [
      { redirect_uris: ['http://example.com/callback'] },
      { redirect_uris: ['https://app.example/cb'], response_types: ['token'] },
      { redirect_uris: ['https://app.example/cb'], grant_types: ['implicit'] },
    ]) {
      const res = await fetchJson(`${gw.url}/register`, { method: 'POST', body: JSON.stringify(clientMetadata) });
      expect(res.status, JSON.stringify(clientMetadata)).toBe(400);
      expect(res.body.error).toBe('invalid_client_metadata');
    }
    const loopback = await fetchJson(`${gw.url}/register`, {
      method: 'POST',
      body: JSON.stringify({ redirect_uris: ['http://localhost:9999/cb'], token_endpoint_auth_method: 'none' }),
    });
    expect(loopback.status).toBe(201);
    expect(loopback.body.client_secret).toBeUndefined();
  });

  it('plain PKCE is refused; deny redirects with access_denied and state intact', async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const provider = new TestOAuthProvider(owner.client, { decision: 'deny' });
    const client = await registerClient(gw.url, { metadata, clientMetadata: provider.clientMetadata });
    const { authorizationUrl } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: client,
      redirectUrl: provider.redirectUrl,
      state: 'st-1',
      resource: mcpUrl(),
    });
    authorizationUrl.searchParams.set('code_challenge_method', 'plain');
    const plain = await owner.client.fetch(authorizationUrl.href, { redirect: 'manual' });
    expect(plain.status).toBe(302);
    const location = new URL(plain.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    // The request's state comes back with the error (RFC 6749 4.1.2.1), though the SDK's handler refused it before reading it.
    expect(location.searchParams.get('state')).toBe('st-1');
    expect(location.searchParams.get('error_description')).toContain('code_challenge_method');

    provider.client = client;
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
    expect(provider.landed!.searchParams.get('error')).toBe('access_denied');
    expect(provider.landed!.searchParams.get('state')).toBe(provider.stateValue);
    expect(provider.landed!.searchParams.get('code')).toBeNull();
  });

  it('an expired access token', async () => {
    const connected = await authorize(owner.client, mcpUrl());
    const token = connected.saved!.access_token;
    await gw.gateway.services.store
      .updateTable('oauth_tokens')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', tokenHash(token))
      .execute();
    const res = await listTools('/mcp', token);
    expect(res.status).toBe(401);
    expect(res.body.error).toMatch(/expired/);
  });

  it('a scope above the user role: refused alone, capped when asked with others', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const member = browserClient(gw.url);
    await signIn(member, gw.url, account);
    const { userId } = await addMember(gw, owner.ownOrganizationId, account, 'member');
    await switchTo({ client: member, account, userId, ownOrganizationId: '' }, owner.ownOrganizationId);

    const refused = new TestOAuthProvider(member, { scope: 'mcp:admin' });
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    refused.client = await registerClient(gw.url, { metadata, clientMetadata: refused.clientMetadata });
    const { authorizationUrl } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: refused.client,
      redirectUrl: refused.redirectUrl,
      scope: 'mcp:admin',
      state: 's2',
      resource: mcpUrl(),
    });
    const res = await member.fetch(authorizationUrl.href, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_scope');
    expect(location.searchParams.get('state')).toBe('s2');

    // The SDK asks for every scope the metadata lists: a member gets mcp:write, never mcp:admin.
    const capped = await authorize(member, mcpUrl());
    expect(capped.consent!.html).not.toContain('<code>mcp:admin</code>');
    expect(capped.saved!.scope).toBe('mcp:write');
    // A member lists only their own connected clients; the owner's many grants in this organization stay out of view.
    const mine = await member.fetch('/api/oauth/clients');
    expect(mine.body.map((g: { userId: string }) => g.userId)).toEqual([userId]);
    const ownersGrant = (await owner.client.fetch('/api/oauth/clients')).body.find((g: { userId: string }) => g.userId === owner.userId);
    expect((await member.fetch(`/api/oauth/clients/${ownersGrant.id}`, { method: 'DELETE' })).status).toBe(404);
    const client = await connectWith(capped, mcpUrl());
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('list_api_keys');
    await client.close();
  });

  it('a token follows its user: a lowered role lowers its scope, the token of a removed member is refused', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const admin = browserClient(gw.url);
    await signIn(admin, gw.url, account);
    const { userId } = await addMember(gw, owner.ownOrganizationId, account, 'admin');
    await switchTo({ client: admin, account, userId, ownOrganizationId: '' }, owner.ownOrganizationId);
    const connected = await authorize(admin, mcpUrl());
    expect(connected.saved!.scope).toBe('mcp:admin');
    const names = async () => ((await listTools('/mcp', connected.saved!.access_token)).body.result?.tools ?? []).map((t: { name: string }) => t.name);
    expect(await names()).toContain('list_api_keys');

    const { store } = gw.gateway.services;
    const membership = (q: any) => q.where('organization_id', '=', owner.ownOrganizationId).where('user_id', '=', userId);
    await membership(store.updateTable('memberships').set({ role: 'member' })).execute();
    expect(await names()).not.toContain('list_api_keys');
    expect(await names()).toContain('list_workflows');
    await membership(store.deleteFrom('memberships')).execute();
    expect((await listTools('/mcp', connected.saved!.access_token)).status).toBe(401);
  });

  it("an admin's agent key without mcp:admin sees and revokes only the admin's own grants", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const browser = browserClient(gw.url);
    await signIn(browser, gw.url, account);
    const { userId } = await addMember(gw, owner.ownOrganizationId, account, 'admin');
    await switchTo({ client: browser, account, userId, ownOrganizationId: '' }, owner.ownOrganizationId);
    await authorize(browser, mcpUrl());
    const { services } = gw.gateway;
    const keyOf = async (scope: 'mcp:write' | 'mcp:admin') =>
      (await services.keys.create({ organizationId: owner.ownOrganizationId, userId, name: `${scope} agent`, scope })).key;
    const ownersGrant = (await owner.client.fetch('/api/oauth/clients')).body.find((g: { userId: string }) => g.userId === owner.userId);
    expect(ownersGrant).toBeDefined();

    const writer = await keyOf('mcp:write');
    const seen = await fetchJson(`${gw.url}/api/oauth/clients`, { key: writer });
    expect(seen.status).toBe(200);
    expect(new Set(seen.body.map((g: { userId: string }) => g.userId))).toEqual(new Set([userId]));
    // Before: a leaked mcp:write key of an admin could disconnect every member's clients.
    expect((await fetchJson(`${gw.url}/api/oauth/clients/${ownersGrant.id}`, { key: writer, method: 'DELETE' })).status).toBe(404);
    const administrator = await keyOf('mcp:admin');
    const all = await fetchJson(`${gw.url}/api/oauth/clients`, { key: administrator });
    expect(all.body.map((g: { userId: string }) => g.userId)).toContain(owner.userId);
  });

  it('a consent given for one organization grants nothing after the session switched to another', async () => {
    const carol = await newSignedInUser(gw);
    await addMember(gw, owner.ownOrganizationId, carol.account, 'admin');
    const provider = new TestOAuthProvider(carol.client);
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    provider.client = await registerClient(gw.url, { metadata, clientMetadata: provider.clientMetadata });
    const { authorizationUrl } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: provider.client,
      redirectUrl: provider.redirectUrl,
      state: 's-switch',
      resource: mcpUrl(),
    });
    const page = await carol.client.fetch(authorizationUrl.href, { redirect: 'manual' });
    expect(page.status).toBe(200);
    // Another tab switches the session to the organization where Carol is an admin, then she approves the first page.
    await switchTo(carol, owner.ownOrganizationId);
    const decided = await carol.client.fetch('/authorize/decision', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request: consentHandle(String(page.body)), decision: 'approve' }).toString(),
      redirect: 'manual',
    });
    expect(decided.status).toBe(400);
    expect(String(decided.body)).toContain('Your active organization changed');
    const grants = await gw.gateway.services.store.selectFrom('oauth_grants').select('id').where('user_id', '=', carol.userId).execute();
    expect(grants).toEqual([]);
  });

  it('removing a member disconnects the OAuth clients they connected: no refresh meanwhile, nothing back on a re-invite', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const browser = browserClient(gw.url);
    await signIn(browser, gw.url, account);
    const { userId } = await addMember(gw, owner.ownOrganizationId, account, 'admin');
    await switchTo({ client: browser, account, userId, ownOrganizationId: '' }, owner.ownOrganizationId);
    const connected = await authorize(browser, mcpUrl());
    const refresh = (refreshToken: string) =>
      fetch(`${gw.url}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, ...clientCredentials(connected) }).toString(),
      });

    const removed = await owner.client.fetch(`/api/organization/members/${userId}`, { method: 'DELETE' });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body.oauthGrantsRevoked).toBe(1);
    // Before: the refresh token renewed the grant while its user was out, and the old token answered again on a re-invite.
    const renewed = await refresh(connected.saved!.refresh_token!);
    expect(renewed.status).toBe(400);
    expect((await renewed.json()).error).toBe('invalid_grant');
    await addMember(gw, owner.ownOrganizationId, account, 'member');
    expect((await listTools('/mcp', connected.saved!.access_token)).status).toBe(401);
    const audit = await owner.client.fetch(`/api/audit-log?action=oauth_grant_revoked&limit=200`);
    expect(audit.body.rows.some((r: { details?: { reason?: string } }) => r.details?.reason === 'member_removed')).toBe(true);
  });

  it('a refresh token of a user whose membership ended another way revokes its grant', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const browser = browserClient(gw.url);
    await signIn(browser, gw.url, account);
    const { userId } = await addMember(gw, owner.ownOrganizationId, account, 'member');
    await switchTo({ client: browser, account, userId, ownOrganizationId: '' }, owner.ownOrganizationId);
    const connected = await authorize(browser, mcpUrl());
    const { store } = gw.gateway.services;
    await store.deleteFrom('memberships').where('organization_id', '=', owner.ownOrganizationId).where('user_id', '=', userId).execute();
    const renewed = await fetch(`${gw.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: connected.saved!.refresh_token!, ...clientCredentials(connected) }).toString(),
    });
    expect(renewed.status).toBe(400);
    expect((await renewed.json()).error_description).toContain('no longer a member');
    const grant = await store.selectFrom('oauth_grants').select(['revoked_at', 'revoked_reason']).where('user_id', '=', userId).executeTakeFirstOrThrow();
    expect(grant).toMatchObject({ revoked_at: expect.any(String), revoked_reason: 'member_removed' });
  });

  it('a client_id metadata URL the egress policy refuses', async () => {
    const url = new URL(`${gw.url}/authorize`);
    const params = {
      client_id: 'https://127.0.0.1/oauth/client.json',
      redirect_uri: 'https://app.example/cb',
      response_type: 'code',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
    };
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    const res = await owner.client.fetch(url.href, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client');
    expect(res.body.error_description).toMatch(/could not be fetched/);
    // Why is not told to an anonymous caller: no resolved address, no egress verdict, no TLS or HTTP detail.
    for (const clientId of ['https://127.0.0.1/oauth/client.json', 'https://localhost/oauth/client.json', 'https://169.254.169.254/latest/meta']) {
      url.searchParams.set('client_id', clientId);
      const refused = await owner.client.fetch(url.href, { redirect: 'manual' });
      expect(refused.status).toBe(400);
      expect(refused.body.error_description).toBe(
        `client_id ${clientId}: the metadata document could not be fetched: it must be served over https by a public host, answer 200 within 5 s, and hold at most 64 KiB`,
      );
    }
  });

  it('without a session /authorize shows wallet sign-in; a decision from another origin is refused', async () => {
    const anonymous = browserClient(gw.url);
    const provider = new TestOAuthProvider(anonymous);
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('REDIRECT');
    expect(provider.consent!.status).toBe(200);
    expect(provider.consent!.html).toContain('Sign in with your wallet');
    expect(provider.landed).toBeUndefined();

    const page = await owner.client.fetch(provider.authorizationUrl!.href);
    const handle = /name="request" value="([^"]+)"/.exec(page.body)![1]!;
    const foreign = await owner.client.fetch('/authorize/decision', {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request: handle, decision: 'approve' }).toString(),
      redirect: 'manual',
    });
    expect(foreign.status).toBe(403);
  });

  it('a registered client that never completes a flow expires', async () => {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const client = await registerClient(gw.url, { metadata, clientMetadata: new TestOAuthProvider(undefined).clientMetadata });
    await gw.gateway.services.store
      .updateTable('oauth_clients')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('client_id', '=', client.client_id)
      .execute();
    const { authorizationUrl } = await startAuthorization(gw.url, {
      metadata,
      clientInformation: client,
      redirectUrl: 'http://127.0.0.1:53682/callback',
      resource: mcpUrl(),
    });
    const res = await owner.client.fetch(authorizationUrl.href, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client');
  });
});

describe('registration rate limit', () => {
  it('is per IP, answered as an RFC 6749 error', async () => {
    const limited = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_OAUTH_REGISTER_PER_IP: '2' } });
    try {
      const register = () => fetchJson(`${limited.url}/register`, { method: 'POST', body: JSON.stringify({ redirect_uris: ['https://app.example/cb'] }) });
      expect((await register()).status).toBe(201);
      expect((await register()).status).toBe(201);
      const third = await register();
      expect(third.status).toBe(429);
      expect(third.body.error).toBe('too_many_requests');
      expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await limited.close();
    }
  });
});

describe('?login: a client that signs in only after a 401', () => {
  it('gets the challenge on /mcp?login, and the SDK transport runs OAuth from it (finishAuth, then tools)', async () => {
    const anonymous = await fetchJson(`${gw.url}/mcp?login`, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gw.url}/.well-known/oauth-protected-resource/mcp"`);
    // Plain /mcp keeps serving anonymous callers the public tools.
    const plain = await fetchJson(`${gw.url}/mcp?login=false`, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(plain.status).toBe(200);

    const url = new URL(`${gw.url}/mcp?login`);
    const provider = new TestOAuthProvider(owner.client, { clientName: 'Login Connector' });
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    const client = new Client({ name: 'oauth-login-test', version: '1.0.0' });
    await expect(client.connect(transport)).rejects.toThrow(/Unauthorized/);
    await transport.finishAuth(provider.code());
    const connected = await connectWith(provider, url);
    expect((await connected.listTools()).tools.map((t) => t.name)).toContain('list_workflows');
    await connected.close();
  });
});

describe('a tool above the token scope (MCP scope challenge, RFC 6750 §3.1)', () => {
  it('answers 403 with WWW-Authenticate insufficient_scope and the scope to ask for; the SDK transport authorizes that scope and the call goes through', async () => {
    const provider = await authorize(owner.client, mcpUrl(), { scope: 'mcp:read' });
    expect(provider.saved!.scope).toBe('mcp:read');
    const reader = provider.saved!.access_token;
    const call = (name: string, token: string) =>
      fetchJson(`${gw.url}/mcp`, {
        method: 'POST',
        headers: { ...bearer(token), accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: { name: 'Scoped', nodes: [], edges: [] } } }),
      });
    const refused = await call('create_workflow', reader);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('Bearer error="insufficient_scope", scope="mcp:write"');
    expect(refused.headers.get('www-authenticate')).toContain(`resource_metadata="${gw.url}/.well-known/oauth-protected-resource/mcp"`);
    expect(refused.body).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      error: { data: { code: 'insufficient_scope', required_scope: 'mcp:write', granted_scope: 'mcp:read' } },
    });
    // An API key of the same scope cannot be re-authorized: it keeps the tool result every caller got.
    const key = await gw.createKey({ name: 'read key', scope: 'mcp:read' });
    const asKey = await call('create_workflow', key);
    expect(asKey.status).toBe(200);
    expect(JSON.stringify(asKey.body)).toContain('insufficient_scope');

    // The SDK client follows the challenge: it asks the user for mcp:write and, once approved, the call goes through.
    // (It refreshes first when it holds a refresh token, which cannot widen a grant; this client kept none.)
    provider.saved = { access_token: reader, token_type: 'Bearer' };
    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
    const client = new Client({ name: 'scope-step-up', version: '1.0.0' });
    await client.connect(transport);
    await expect(client.callTool({ name: 'create_workflow', arguments: { name: 'Scoped', nodes: [], edges: [] } })).rejects.toThrow(/Unauthorized/);
    expect(provider.authorizationUrl!.searchParams.get('scope')).toBe('mcp:write');
    await transport.finishAuth(provider.code());
    expect(provider.saved!.scope).toBe('mcp:write');
    const created = await client.callTool({ name: 'create_workflow', arguments: { name: 'Scoped', nodes: [], edges: [] } });
    expect(created.isError, JSON.stringify(created)).toBeFalsy();
    await client.close();
  });
});

describe('OAuth through /.well-known/mcp, the same server as /mcp', () => {
  it('has metadata of its own, so the SDK client authorizes there; the token serves /.well-known/mcp and /mcp, not the REST API', async () => {
    const anonymous = await fetchJson(`${gw.url}/.well-known/mcp?login`, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gw.url}/.well-known/oauth-protected-resource/.well-known/mcp"`);
    const metadata = await fetchJson(`${gw.url}/.well-known/oauth-protected-resource/.well-known/mcp`);
    expect(metadata.body).toMatchObject({ resource: `${gw.url}/.well-known/mcp`, authorization_servers: [gw.url] });

    // Before, the SDK refused: "Protected resource .../mcp does not match expected .../.well-known/mcp".
    const url = new URL(`${gw.url}/.well-known/mcp?login`);
    const provider = new TestOAuthProvider(owner.client, { clientName: 'Well-known Connector' });
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await expect(new Client({ name: 'well-known', version: '1.0.0' }).connect(transport)).rejects.toThrow(/Unauthorized/);
    await transport.finishAuth(provider.code());
    const connected = await connectWith(provider, url);
    expect((await connected.listTools()).tools.map((t) => t.name)).toContain('list_workflows');
    await connected.close();

    const token = provider.saved!.access_token;
    expect((await listTools('/mcp', token)).status).toBe(200);
    const rest = await fetchJson(`${gw.url}/api/workflows`, { headers: bearer(token) });
    expect(rest.status).toBe(401);
    expect(rest.body.error).toContain(`issued for resource ${gw.url}/.well-known/mcp`);
  });
});
