import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG_ORGANIZATION_SLUG } from '../src/catalog/sync.ts';
import { validateCallInput } from '../src/catalog/input.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { startHttpTarget } from './helpers/http-target.ts';

/**
 * The edges under hostile input (issue 12, A4 and A6): JSON-RPC batches and
 * the MCP rate limits, malformed tools/call envelopes, deeply nested bodies,
 * Origin checks and CORS, and request bodies shorter than their Content-Length.
 */

const ALLOWED_ORIGIN = 'https://app.example';
const FOREIGN_ORIGIN = 'https://evil.example';

let gw: TestGateway;
beforeAll(async () => {
  // Default rate limits (10 anonymous tools/call per IP per minute) and one configured browser origin.
  gw = await startTestGateway({ env: { FLOWGATE_ALLOWED_ORIGINS: `${ALLOWED_ORIGIN}, http://localhost:5173` } });
});
afterAll(() => gw.close());

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const callHello = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'call_workflow', arguments: { slug: 'helloworld' } } });

/** Runs the listed workflow `slug` has started, read over REST by the catalog organization. */
async function runsOf(slug: string): Promise<number> {
  const catalogKey = await gw.createKey({ org: CATALOG_ORGANIZATION_SLUG, scope: 'mcp:read' });
  const listing = await fetchJson(`${gw.url}/api/mcp/workflows/${slug}`);
  const runs = await fetchJson(`${gw.url}/api/workflows/${listing.body.workflowId}/executions`, { key: catalogKey });
  expect(runs.status).toBe(200);
  return runs.body.length;
}

const nested = (depth: number) => '{"a":'.repeat(depth - 1) + '1' + '}'.repeat(depth - 1);

describe('JSON-RPC envelopes', () => {
  it('answers valid JSON that is no JSON-RPC message with -32600 Invalid Request naming the field, and its id', async () => {
    const cases: [unknown, string, unknown][] = [
      [{ id: 1, method: 'tools/list' }, '"jsonrpc" must be "2.0" (got nothing)', 1],
      [{ jsonrpc: '1.0', id: 2, method: 'tools/list' }, '"jsonrpc" must be "2.0" (got "1.0")', 2],
      [{ jsonrpc: '2.0', id: 3, method: 5 }, '"method" must be a string', 3],
      [{ jsonrpc: '2.0', id: 4, method: 'tools/list', params: [1] }, '"params" must be an object', 4],
      [{ jsonrpc: '2.0', id: { no: 1 }, method: 'ping' }, '"id" must be a string or a number', null],
      [{ jsonrpc: '2.0', id: 6 }, 'a message needs "method"', 6],
    ];
    for (const path of ['/mcp', '/mcp/w/helloworld']) {
      for (const [body, says, id] of cases) {
        const res = await post(`${gw.url}${path}`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        const answer = await res.json();
        expect(answer, JSON.stringify(body)).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
        expect(answer.error.message, JSON.stringify(body)).toContain(says);
      }
    }
  });
});

describe('JSON-RPC batches', () => {
  it('refuses a batch under protocol 2025-06-18 or later with 400 -32600, running nothing', async () => {
    const before = await runsOf('helloworld');
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await post(`${gw.url}/mcp`, [callHello(1), callHello(2)], { 'mcp-protocol-version': version });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(body.error.message).toContain('2025-06-18');
    }
    // Without the header, an initialize inside the batch declares the version.
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'batcher', version: '1' } },
    };
    const res = await post(`${gw.url}/mcp`, [init]);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe(-32600);
    expect(await runsOf('helloworld')).toBe(before);
  });

  it('refuses an empty batch and one over 100 messages before counting anything', async () => {
    const empty = await post(`${gw.url}/mcp`, []);
    expect(empty.status).toBe(400);
    expect((await empty.json()).error.code).toBe(-32600);
    const huge = await post(
      `${gw.url}/mcp`,
      Array.from({ length: 101 }, (_, i) => callHello(i + 1)),
    );
    expect(huge.status).toBe(400);
    expect((await huge.json()).error.message).toContain('100');
  });

  it('answers a batch under an older protocol, each message answered by id', async () => {
    const res = await post(
      `${gw.url}/mcp`,
      [
        { jsonrpc: '2.0', id: 'a', method: 'tools/list' },
        { jsonrpc: '2.0', id: 'b', method: 'ping' },
      ],
      { 'mcp-protocol-version': '2025-03-26' },
    );
    expect(res.status).toBe(200);
    const answers: { id: string; result?: { tools?: unknown[] } }[] = await res.json();
    expect(answers.map((a) => a.id).sort()).toEqual(['a', 'b']);
    expect(answers.find((a) => a.id === 'a')!.result!.tools!.length).toBeGreaterThan(0);
  });

  it('answers a batch of one as an array of one; refuses initialize among others, and a malformed message by its place', async () => {
    const one = await post(`${gw.url}/mcp`, [{ jsonrpc: '2.0', id: 'only', method: 'ping' }], { 'mcp-protocol-version': '2025-03-26' });
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual([{ jsonrpc: '2.0', id: 'only', result: {} }]);

    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'batcher', version: '1' } },
    };
    const withInit = await post(`${gw.url}/mcp`, [init, { jsonrpc: '2.0', id: 2, method: 'ping' }], { 'mcp-protocol-version': '2025-03-26' });
    expect(withInit.status).toBe(400);
    const refused = await withInit.json();
    expect(refused.error.code).toBe(-32600);
    expect(refused.error.message).toContain('initialize must be sent alone');

    const malformed = await post(
      `${gw.url}/mcp`,
      [
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { id: 2, method: 'ping' },
      ],
      { 'mcp-protocol-version': '2025-03-26' },
    );
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error).toMatchObject({ code: -32600, message: expect.stringContaining('message 1 of the batch: "jsonrpc" must be "2.0"') });
  });

  it('counts every call of an anonymous batch against the per-IP limit: 100 calls start 10 runs', async () => {
    const before = await runsOf('helloworld');
    const batch = Array.from({ length: 100 }, (_, i) => callHello(i + 1));
    const res = await post(`${gw.url}/mcp`, batch); // no MCP-Protocol-Version: 2025-03-26, which has batches
    expect(res.status).toBe(200);
    const answers: {
      id: number;
      result?: { isError?: boolean; structuredContent?: { status?: string } };
      error?: { code: number; data?: { code?: string } };
    }[] = await res.json();
    expect(answers).toHaveLength(100);
    const ran = answers.filter((a) => a.result);
    const refused = answers.filter((a) => a.error);
    expect(ran).toHaveLength(10);
    expect(ran.every((a) => !a.result!.isError && a.result!.structuredContent!.status === 'success')).toBe(true);
    expect(refused).toHaveLength(90);
    expect(refused.every((a) => a.error!.code === -32029 && a.error!.data!.code === 'rate_limited')).toBe(true);
    expect(new Set(answers.map((a) => a.id)).size).toBe(100);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await runsOf('helloworld')).toBe(before + 10);

    // The budget is spent: a single call now, or another whole batch, is a 429.
    const single = await post(`${gw.url}/mcp`, callHello(101));
    expect(single.status).toBe(429);
    expect((await single.json()).error.code).toBe(-32029);
    const again = await post(`${gw.url}/mcp`, [callHello(102), callHello(103)]);
    expect(again.status).toBe(429);
    expect((await again.json()).map((a: { error: { code: number } }) => a.error.code)).toEqual([-32029, -32029]);
    expect(await runsOf('helloworld')).toBe(before + 10);
  });

  it('counts every message of an organization batch against the per-organization limit', async () => {
    const limited = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_MCP_PER_ORG: '3' } });
    try {
      const batch = Array.from({ length: 5 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/list' }));
      const res = await post(`${limited.url}/mcp`, batch, { authorization: `Bearer ${limited.ownerKey}` });
      expect(res.status).toBe(200);
      const answers: { result?: unknown; error?: { code: number } }[] = await res.json();
      expect(answers.filter((a) => a.result)).toHaveLength(3);
      expect(answers.filter((a) => a.error?.code === -32029)).toHaveLength(2);
      const next = await post(`${limited.url}/mcp`, { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { authorization: `Bearer ${limited.ownerKey}` });
      expect(next.status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('malformed tools/call envelopes', () => {
  it('answers -32602 Invalid params naming the field, not -32603 with zod JSON', async () => {
    const cases: [unknown, string][] = [
      [{}, 'params.name'],
      [{ name: 5 }, 'params.name'],
      [{ name: 'list_chains', arguments: 'x' }, 'params.arguments'],
      [undefined, 'params'],
    ];
    for (const [params, field] of cases) {
      const res = await post(
        `${gw.url}/mcp`,
        { jsonrpc: '2.0', id: 7, method: 'tools/call', ...(params === undefined ? {} : { params }) },
        { authorization: `Bearer ${gw.ownerKey}` },
      );
      const body = await res.json();
      expect(body.error.code, JSON.stringify(params)).toBe(-32602);
      expect(body.id).toBe(7);
      expect(body.error.message).toContain(field);
      expect(body.error.message).toMatch(/^Invalid params for tools\/call: /);
      expect(body.error.message).not.toMatch(/"code"|invalid_type|\[\s*\{/);
    }
  });

  it('leaves well-formed calls through the SDK client as they were', async () => {
    const client = await connectMcp(gw.url, gw.ownerKey);
    const chains = await callTool(client, 'list_chains');
    expect(chains.isError).toBe(false);
    await client.close();
  });
});

describe('nesting depth', () => {
  it('refuses bodies nested 2,000 deep with 400 naming the limit, over REST and MCP, running nothing', async () => {
    const before = await runsOf('simple-workflow');
    const rest = await fetchJson(`${gw.url}/api/mcp/workflows/simple-workflow/call`, { method: 'POST', body: nested(2000) });
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ code: 'invalid_json', limit: 64 });
    expect(rest.body.error).toContain('64');

    const inMcp = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_workflow","arguments":{"slug":"simple-workflow","inputs":${nested(2000)}}}}`;
    for (const path of ['/mcp', '/mcp/w/simple-workflow', '/.well-known/mcp']) {
      const res = await post(`${gw.url}${path}`, inMcp, { authorization: `Bearer ${gw.ownerKey}` });
      expect(res.status, path).toBe(400);
      const body = await res.json();
      expect(body.error.code).toBe(-32700);
      expect(body.error.message).toContain('64');
    }
    // Other REST routes share the reader.
    const create = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key: gw.ownerKey, body: nested(2000) });
    expect(create.status).toBe(400);
    expect(create.body.code).toBe('invalid_json');
    expect(await runsOf('simple-workflow')).toBe(before);
  });

  it('accepts a body within the limit', async () => {
    // With a key: the tests above spent this IP's budget of anonymous calls, which REST calls of free workflows share.
    const ok = await fetchJson(`${gw.url}/api/mcp/workflows/simple-workflow/call`, {
      method: 'POST',
      key: gw.ownerKey,
      body: JSON.stringify({ txid: '0x1', amount: 1, deep: JSON.parse(nested(60)) }),
    });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('success');
  });

  it('the catalog input reader itself refuses a deep value with invalid_input, without recursing', () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 5000; i++) deep = { a: deep };
    expect(() => validateCallInput('simple-workflow', { type: 'object' }, deep)).toThrow(expect.objectContaining({ status: 400, code: 'invalid_input' }));
  });
});

describe('Origin and CORS', () => {
  it('refuses a foreign Origin on every MCP endpoint with 403 JSON, before anything runs', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    for (const path of ['/mcp', '/mcp/w/helloworld', '/.well-known/mcp']) {
      const res = await post(`${gw.url}${path}`, list, { origin: FOREIGN_ORIGIN });
      expect(res.status, path).toBe(403);
      const body = await res.json();
      expect(body.error).toMatchObject({ code: -32000, data: { code: 'origin_not_allowed' } });
      expect(body.error.message).toContain(FOREIGN_ORIGIN);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
    expect((await post(`${gw.url}/mcp`, list, { origin: 'null' })).status).toBe(403);
  });

  it('accepts the base URL origin, configured origins, and requests without Origin', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    for (const origin of [new URL(gw.url).origin, ALLOWED_ORIGIN, 'http://localhost:5173', undefined]) {
      const res = await post(`${gw.url}/mcp`, list, origin ? { origin } : {});
      expect(res.status, origin).toBe(200);
      if (!origin) continue;
      expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      // The answer depends on the Origin (caches keep them apart), and a script may read the MCP headers.
      expect(res.headers.get('vary')).toMatch(/origin/i);
      expect(res.headers.get('access-control-expose-headers')).toContain('Mcp-Protocol-Version');
    }
  });

  const preflight = (path: string, origin: string, method = 'POST') =>
    fetch(`${gw.url}${path}`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
    });

  it('preflights routes that take a credential only for trusted origins, never with *', async () => {
    for (const [path, method] of [
      ['/mcp', 'POST'],
      ['/api/workflows', 'GET'],
      ['/api/workflows/create', 'POST'],
      ['/api/execute/transfer', 'POST'],
      ['/mcp/w/helloworld', 'POST'],
    ] as const) {
      const foreign = await preflight(path, FOREIGN_ORIGIN, method);
      expect(foreign.headers.get('access-control-allow-origin'), path).toBeNull();
      const trusted = await preflight(path, ALLOWED_ORIGIN, method);
      expect(trusted.headers.get('access-control-allow-origin'), path).toBe(ALLOWED_ORIGIN);
      expect(trusted.headers.get('vary')).toMatch(/origin/i);
      expect(trusted.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
    }
    // The actual answer to a foreign page carries no CORS header either, so the browser hides it.
    const read = await fetch(`${gw.url}/api/workflows`, { headers: { origin: FOREIGN_ORIGIN, authorization: `Bearer ${gw.ownerKey}` } });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
    expect(read.headers.get('access-control-expose-headers')).toBeNull();
    const trustedRead = await fetch(`${gw.url}/api/workflows`, { headers: { origin: ALLOWED_ORIGIN, authorization: `Bearer ${gw.ownerKey}` } });
    expect(trustedRead.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
    expect(trustedRead.headers.get('vary')).toMatch(/origin/i);
    expect(trustedRead.headers.get('access-control-expose-headers')).toContain('X-RateLimit-Remaining');
  });

  it('keeps * on public documents and public operations', async () => {
    for (const [path, method] of [
      ['/api/chains', 'GET'],
      ['/openapi.json', 'GET'],
      ['/.well-known/mcp.json', 'GET'],
      ['/.well-known/mcp', 'GET'],
      ['/api/mcp/schemas', 'GET'],
      ['/api/mcp/workflows/helloworld/call', 'POST'],
      ['/docs/quick-start', 'GET'],
    ] as const) {
      const res = await preflight(path, FOREIGN_ORIGIN, method);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
    const doc = await fetch(`${gw.url}/openapi.json`, { headers: { origin: FOREIGN_ORIGIN } });
    expect(doc.headers.get('access-control-allow-origin')).toBe('*');
    expect(doc.headers.get('access-control-expose-headers')).toContain('ETag');
    expect(doc.headers.get('vary') ?? '').not.toMatch(/origin/i);
  });
});

describe('request bodies shorter than their Content-Length', () => {
  let short: TestGateway;
  let target: Awaited<ReturnType<typeof startHttpTarget>>;
  beforeAll(async () => {
    target = await startHttpTarget();
    short = await startTestGateway({ env: { FLOWGATE_REQUEST_TIMEOUT_MS: '300', FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' } });
  });
  afterAll(async () => {
    await short.close();
    await target.close();
  });

  /** Sends headers announcing 100 bytes, then 10, and reads until the server closes the socket. */
  function sendShortBody(path: string): Promise<string> {
    const { hostname, port } = new URL(short.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nAuthorization: Bearer ${short.ownerKey}\r\nContent-Length: 100\r\n\r\n{"name":"x`,
        );
      });
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk) => (received += chunk));
      socket.on('error', reject);
      socket.on('close', () => resolve(received));
    });
  }

  it('answers 408 request_timeout and closes the socket, on REST and MCP', async () => {
    for (const path of ['/api/workflows/create', '/mcp']) {
      const answer = await sendShortBody(path);
      expect(answer, path).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toMatch(/connection: close/i);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'request_timeout' });
    }
  });

  it('still lets complete requests take longer than the timeout to answer', async () => {
    const graph = {
      name: 'Hangs',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        {
          id: 'h',
          type: 'action',
          data: { label: 'Hang', config: { actionType: 'HTTP Request', endpoint: `${target.url}/hang`, httpMethod: 'GET', timeout: 2500 } },
        },
      ],
      edges: [{ id: 'e', source: 't', target: 'h' }],
    };
    const created = await fetchJson(`${short.url}/api/workflows/create`, { method: 'POST', key: short.ownerKey, body: JSON.stringify(graph) });
    expect(created.status).toBe(200);
    const run = await fetchJson(`${short.url}/api/workflows/${created.body.id}/execute`, { method: 'POST', key: short.ownerKey, body: '{}' });
    const executionId = run.body.executionId;
    const waited = await fetchJson(`${short.url}/api/workflows/executions/${executionId}/wait?timeoutMs=1000`, { key: short.ownerKey });
    expect(waited.status).toBe(200);
    expect(waited.body.status).toBe('running');
    const client = await connectMcp(short.url, short.ownerKey);
    const viaMcp = await callTool(client, 'wait_for_execution', { executionId, timeoutMs: 1000 });
    expect(viaMcp.isError).toBe(false);
    expect(viaMcp.structured.status).toBe('running');
    await client.close();
    // The step times out by itself (timeout 2500), so nothing runs on after the test.
    const ended = await fetchJson(`${short.url}/api/workflows/executions/${executionId}/wait?timeoutMs=10000`, { key: short.ownerKey });
    expect(ended.body.completed).toBe(true);
  });
});
