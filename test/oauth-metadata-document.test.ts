import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, freePort, tempDir } from './helpers/gateway.ts';
import { TestOAuthProvider } from './helpers/oauth.ts';
import { browserClient, signIn } from './helpers/session.ts';

/**
 * The authorization server metadata says `client_id_metadata_document_supported:
 * true`: a client may name itself by an https URL of its metadata instead of
 * registering. Every other test could only see that fetch refused (no TLS
 * here), so this one runs the whole flow with the MCP SDK's own client: a
 * gateway process that trusts a test certificate (NODE_EXTRA_CA_CERTS, read
 * only at process start) fetches the document from a local https server,
 * shows the consent page, and issues a token that /mcp accepts.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// A self-signed certificate for 127.0.0.1 made for these tests only (its key is no secret).
const tls = path.join(root, 'test/fixtures/tls');

let documents: https.Server;
let documentUrl: string;
let fetches = 0;
let gateway: ChildProcess;
let baseUrl: string;

beforeAll(async () => {
  const redirectUri = 'http://127.0.0.1:53682/callback';
  documents = https.createServer({ key: fs.readFileSync(path.join(tls, 'key.pem')), cert: fs.readFileSync(path.join(tls, 'cert.pem')) }, (req, res) => {
    fetches += 1;
    const names: Record<string, string> = { '/clients/connector.json': 'Metadata Document Connector', '/clients/spoof.json': 'Trusted \u202Etxt.exe' };
    const name = names[req.url ?? ''];
    if (!name) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        client_id: `https://127.0.0.1:${(documents.address() as AddressInfo).port}${req.url}`,
        client_name: name,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    );
  });
  await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
  documentUrl = `https://127.0.0.1:${(documents.address() as AddressInfo).port}/clients/connector.json`;

  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  gateway = spawn(process.execPath, [path.join(root, 'bin/flowgate.js'), 'serve'], {
    env: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: path.join(tls, 'cert.pem'),
      FLOWGATE_DATA_DIR: tempDir('flowgate-cimd-'),
      PORT: String(port),
      HOST: '127.0.0.1',
      FLOWGATE_BASE_URL: baseUrl,
      FLOWGATE_DEVNET: 'off',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 300; i++) {
    const up = await fetch(`${baseUrl}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) return;
    if (gateway.exitCode !== null) throw new Error(`the gateway exited with ${gateway.exitCode}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the gateway did not answer /healthz within 30 s');
}, 60_000);

afterAll(async () => {
  gateway?.kill('SIGTERM');
  documents?.close();
});

class MetadataDocumentProvider extends TestOAuthProvider {
  get clientMetadataUrl() {
    return documentUrl;
  }
}

describe('a client named by its metadata document URL', () => {
  it('is fetched, shown on the consent page, and its token works on /mcp; nothing is registered', async () => {
    const browser = browserClient(baseUrl);
    await signIn(browser, baseUrl, privateKeyToAccount(generatePrivateKey()));
    const provider = new MetadataDocumentProvider(browser, { scope: 'mcp:read' });
    const serverUrl = new URL(`${baseUrl}/mcp`);

    expect(await auth(provider, { serverUrl, scope: 'mcp:read' })).toBe('REDIRECT');
    // The SDK took the gateway's advertised support at its word: no registration, the URL is the client id.
    expect(provider.client).toEqual({ client_id: documentUrl, issuer: baseUrl });
    expect(provider.authorizationUrl!.searchParams.get('client_id')).toBe(documentUrl);
    expect(provider.consent?.status).toBe(200);
    expect(provider.consent?.html).toContain('Metadata Document Connector');
    expect(fetches).toBeGreaterThanOrEqual(1);

    expect(await auth(provider, { serverUrl, authorizationCode: provider.code() })).toBe('AUTHORIZED');
    const listed = await fetchJson(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${provider.saved!.access_token}`, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(listed.status).toBe(200);
    expect(listed.body.result.tools.map((t: { name: string }) => t.name)).toContain('list_workflows');
  }, 60_000);
});

describe('/token and /revoke never fetch a metadata document', () => {
  const post = (path: string, fields: Record<string, string>) =>
    fetchJson(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });

  it('a client_id URL never seen at /authorize is invalid_client there, and nothing is fetched', async () => {
    const unseen = documentUrl.replace('connector.json', 'unseen.json');
    const before = fetches;
    const answers = [
      await post('/token', { grant_type: 'authorization_code', client_id: unseen, code: 'fgac_x', code_verifier: 'a'.repeat(43) }),
      await post('/token', { grant_type: 'refresh_token', client_id: unseen, refresh_token: 'fgrt_x' }),
      await post('/revoke', { client_id: unseen, token: 'fgat_x' }),
      // Even the URL of a real document: until /authorize has fetched it, the token endpoint does not.
      await post('/token', { grant_type: 'refresh_token', client_id: documentUrl.replace('connector.json', 'spoof.json'), refresh_token: 'fgrt_x' }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toBe('invalid_client');
    }
    expect(fetches).toBe(before);
  });
});

describe('a metadata document whose client_name would mislead', () => {
  it('is refused at /authorize as invalid_client naming client_name', async () => {
    const url = new URL(`${baseUrl}/authorize`);
    for (const [name, value] of Object.entries({
      client_id: documentUrl.replace('connector.json', 'spoof.json'),
      redirect_uri: 'http://127.0.0.1:53682/callback',
      response_type: 'code',
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'S256',
    }))
      url.searchParams.set(name, value);
    const res = await fetchJson(url.href, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client');
    expect(res.body.error_description).toContain('client_name must not contain control, format');
  });
});
