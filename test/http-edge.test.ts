import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

describe('HTTP edge', () => {
  it('answers /healthz with the database status', async () => {
    const res = await fetchJson(`${gw.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'ok',
      database: 'ok',
      store: { kind: process.env.FLOWGATE_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite', reachable: true },
    });
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('renders an unknown route as a 404 JSON error', async () => {
    const res = await fetchJson(`${gw.url}/api/does-not-exist`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.body).toMatchObject({ code: 'not_found' });
    expect(res.body.error).toContain('/openapi.json');
  });

  it('answers a known path with the wrong method as 405 with Allow', async () => {
    const res = await fetchJson(`${gw.url}/api/chains`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.body.code).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toContain('GET');
  });

  it('routes like express did: any case, optional trailing slash, HEAD by the GET operation, literal segments before parameters', async () => {
    expect((await fetchJson(`${gw.url}/API/Chains/`)).status).toBe(200);
    const head = await fetch(`${gw.url}/api/chains`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    // `public` is a literal route, not a workflow id: anonymous GET works, and the 405 lists every method that URL answers.
    expect((await fetchJson(`${gw.url}/api/workflows/public`)).status).toBe(200);
    const post = await fetchJson(`${gw.url}/api/workflows/public`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, PATCH, DELETE, HEAD, OPTIONS');
  });

  it('answers a path with malformed percent-encoding with 400 saying so', async () => {
    const res = await fetchJson(`${gw.url}/api/workflows/%E0%A4%A/executions`);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain('percent-encoding');
  });

  it('refuses malformed JSON with 400 invalid_json, never as an empty body', async () => {
    const res = await fetchJson(`${gw.url}/api/keys`, { method: 'GET' });
    expect(res.status).toBe(401);
    const bad = await fetch(`${gw.url}/healthz`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'invalid_json' });
  });

  it('refuses a body over the size limit with 413', async () => {
    const huge = JSON.stringify({ blob: 'x'.repeat(1024 * 1024 + 10) });
    const res = await fetch(`${gw.url}/healthz`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: huge });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: 'payload_too_large' });
  });

  it('accepts Service-Version 1 and refuses other versions naming the supported ones', async () => {
    const ok = await fetchJson(`${gw.url}/api/chains`, { headers: { 'Service-Version': '1' } });
    expect(ok.status).toBe(200);
    const bad = await fetchJson(`${gw.url}/api/chains`, { headers: { 'Service-Version': '2' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'unsupported_version', supportedVersions: ['1'] });
    expect(bad.body.error).toContain('1');
  });

  it('sends CORS headers agents in browsers need', async () => {
    const preflight = await fetch(`${gw.url}/api/chains`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://agent.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
    });
    expect(preflight.status).toBeLessThan(300);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
    const simple = await fetch(`${gw.url}/api/chains`, { headers: { Origin: 'https://agent.example' } });
    expect(simple.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
  });

  it('refuses a foreign Host header on a loopback bind (DNS rebinding)', async () => {
    const port = new URL(gw.url).port;
    // Allowed Host values are remembered (src/http/host-header.ts): a foreign one after them is still refused, on any port.
    expect((await rawGet(`${gw.url}/api/chains`, { Host: `localhost:${port}` })).status).toBe(200);
    for (const host of ['evil.example:80', `evil.example:${port}`, `localhost.evil.example:${port}`]) {
      expect((await rawGet(`${gw.url}/api/chains`, { Host: host })).status, host).toBe(403);
    }
    expect((await rawGet(`${gw.url}/api/chains`, { Host: `localhost:${port}` })).status).toBe(200);
  });

  it('ignores unknown query parameters and refuses wrong types with the field path', async () => {
    const ok = await fetchJson(`${gw.url}/api/chains?unknownParam=1`);
    expect(ok.status).toBe(200);
    const bad = await fetchJson(`${gw.url}/api/chains?includeDisabled=maybe`);
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
    expect(bad.body.issues[0].path).toBe('includeDisabled');
    expect(bad.body.error).toContain('includeDisabled: expected true, false, 1 or 0');
  });

  it('serves public documents with ETag and answers If-None-Match with 304', async () => {
    for (const path of ['/api/mcp/schemas', '/api/chains', '/openapi.json']) {
      const first = await rawGet(`${gw.url}${path}`);
      expect(first.status).toBe(200);
      expect(first.headers['cache-control']).toContain('public');
      const etag = first.headers.etag as string;
      expect(etag).toBeTruthy();
      const second = await rawGet(`${gw.url}${path}`, { 'If-None-Match': etag });
      expect(second.status, path).toBe(304);
      expect(second.body).toBe('');
    }
  });

  it('hashes no ETag for a POST answer or an error, which no client revalidates', async () => {
    const ran = await fetchJson(`${gw.url}/api/mcp/workflows/helloworld/call`, { method: 'POST', body: '{}' });
    expect(ran.status).toBe(200);
    expect(ran.body).toMatchObject({ status: 'success' });
    expect(ran.headers.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify(ran.body))));
    expect(ran.headers.get('etag')).toBeNull();
    const missing = await fetchJson(`${gw.url}/api/does-not-exist`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('etag')).toBeNull();
    expect(missing.headers.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify(missing.body))));
    // A GET answer keeps its ETag.
    expect((await fetchJson(`${gw.url}/api/chains`)).headers.get('etag')).toMatch(/^"/);
  });
});
