import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createHttpApp } from '../src/http/app.ts';
import { registry } from '../tools/index.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn } from './helpers/session.ts';
import { addMember } from './helpers/members.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';

/**
 * The MCP fast path (src/mcp/fast-path.ts) against the SDK path it replaces:
 * one gateway's services behind two HTTP apps, the gateway's own (fast path)
 * and one serving every MCP POST through the SDK's Server and transport
 * (`mcpFastPath: false`). Every request is sent to both and the answers must
 * be the same bytes: status, content type, no Mcp-Session-Id, body. Covers
 * every MCP tool of the registry for every kind of caller, initialize and
 * version negotiation, tools/list, ping, notifications, an unknown method,
 * malformed envelopes, an unknown tool, bad arguments, the per-workflow
 * servers and the MPP error form.
 */

let chain: TestChain;
let gw: TestGateway;
let sdk: http.Server;
let sdkUrl: string;
/** Caller name → the headers that make it that caller. */
const callers: Record<string, Record<string, string>> = { anonymous: {} };

beforeAll(async () => {
  // A local chain, so paid listings answer their real payment challenges.
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RATE_LIMITS: 'off' } });
  sdk = http.createServer(createHttpApp(gw.gateway.services, registry, { mcpFastPath: false }));
  await new Promise<void>((resolve) => sdk.listen(0, '127.0.0.1', resolve));
  sdkUrl = `http://127.0.0.1:${(sdk.address() as AddressInfo).port}`;

  callers.owner = { authorization: `Bearer ${gw.ownerKey}` };
  for (const scope of ['mcp:read', 'mcp:write', 'mcp:admin'] as const) callers[scope] = { authorization: `Bearer ${await gw.createKey({ scope })}` };
  // A signed-in browser: the only caller that lists the session-only tools. Its cookie and origin go to both servers.
  const organizationId = (await gw.gateway.services.organizations.ensure('default')).organization.id;
  const member = privateKeyToAccount(generatePrivateKey());
  await addMember(gw, organizationId, member, 'admin');
  const browser = browserClient(gw.url);
  await signIn(browser, gw.url, member);
  callers.session = { cookie: await browser.jar.getCookieString(gw.url), origin: new URL(gw.url).origin };
  const webhookKey = await fetch(`${gw.url}/api/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.ownerKey}` },
    body: JSON.stringify({ name: 'hook' }),
  }).then((r) => r.json() as Promise<{ key: string }>);
  expect(webhookKey.key).toMatch(/^wfb_/);
  callers.webhookKey = { authorization: `Bearer ${webhookKey.key}` };
});
afterAll(async () => {
  await new Promise<void>((resolve) => sdk.close(() => resolve()));
  await gw.close();
  await chain.stop();
});

interface Answer {
  status: number;
  contentType: string | null;
  sessionId: string | null;
  body: string;
}

async function send(base: string, path: string, body: unknown, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, contentType: res.headers.get('content-type'), sessionId: res.headers.get('mcp-session-id'), body: await res.text() };
}

/**
 * The same POST to the SDK path, then the fast path: the two answers must be equal
 * (`normalize` first, for answers that name what each call created: a run's id and time).
 */
async function expectParity(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  label = JSON.stringify(body).slice(0, 120),
  normalize: (body: string) => string = (b) => b,
) {
  const viaSdk = await send(sdkUrl, path, body, headers);
  const viaFast = await send(gw.url, path, body, headers);
  expect({ ...viaFast, body: normalize(viaFast.body) }, label).toEqual({ ...viaSdk, body: normalize(viaSdk.body) });
  expect(viaFast.sessionId, label).toBeNull();
  return viaFast;
}

/** A run's id and timestamps, which differ between two runs of the same workflow. */
const runNormalized = (body: string) =>
  body.replace(/(\\*"executionId\\*":\\*")[A-Za-z0-9_-]+/g, '$1<id>').replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>');

/** What a payment challenge makes fresh for every request (its id, expiry and nonces), for comparing two challenges. */
const challengeNormalized = (body: string) =>
  runNormalized(body)
    .replace(/(\\*"(?:id|nonce|expires|validBefore|validAfter|digest|opaque)\\*":\\*")[^"\\]+/g, '$1<fresh>')
    .replace(/Payment id=\\*"[^"\\]+/g, 'Payment id=<fresh>');

const request = (method: string, params?: unknown, id: string | number = 1) => ({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
const mcpTools = registry.filter((t) => t.mcp);

describe('the fast path answers as the SDK path does', () => {
  it('initialize, for every protocol version and an unknown one (negotiated to the latest)', async () => {
    for (const protocolVersion of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '1999-01-01']) {
      const answer = await expectParity('/mcp', request('initialize', { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } }));
      expect(answer.status).toBe(200);
      expect(answer.contentType).toBe('application/json');
    }
    // The one difference, in framing only: the fast path knows its answer's length, the SDK path streams it chunked.
    const body = JSON.stringify(request('ping'));
    const framing = async (base: string) => (await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).headers;
    expect((await framing(gw.url)).get('content-length')).not.toBeNull();
    expect((await framing(sdkUrl)).get('transfer-encoding')).toBe('chunked');
    // An unsupported MCP-Protocol-Version header on initialize is negotiated, not refused.
    await expectParity('/mcp', request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }), {
      'mcp-protocol-version': '1999-01-01',
    });
  });

  it('tools/list for every kind of caller, and a refused webhook key', async () => {
    const lists: Record<string, number> = {};
    for (const [caller, headers] of Object.entries(callers)) {
      const answer = await expectParity('/mcp', request('tools/list'), headers, caller);
      if (answer.status === 200) lists[caller] = JSON.parse(answer.body).result.tools.length;
    }
    // The callers really see different lists: anonymous the public tools, the session its session-only ones too.
    expect(lists.anonymous).toBeLessThan(lists['mcp:read']!);
    expect(lists['mcp:read']).toBeLessThan(lists['mcp:admin']!);
    expect(lists.session).toBeGreaterThan(lists.owner!);
    expect(lists.webhookKey).toBeUndefined();
  });

  it('ping, notifications, responses, an unknown method, and unsupported protocol headers', async () => {
    for (const [caller, headers] of Object.entries(callers)) {
      await expectParity('/mcp', request('ping'), headers, caller);
      await expectParity('/mcp', request('ping', { _meta: { x: 1 } }, 'str-id'), headers, caller);
      expect((await expectParity('/mcp', { jsonrpc: '2.0', method: 'notifications/initialized' }, headers, caller)).status).toBe(
        caller === 'webhookKey' ? 401 : 202,
      );
      await expectParity('/mcp', { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }, headers, caller);
      await expectParity('/mcp', { jsonrpc: '2.0', id: 9, result: {} }, headers, caller);
      await expectParity('/mcp', request('resources/list'), headers, caller);
      await expectParity('/mcp', request('tools/list'), { ...headers, 'mcp-protocol-version': '1999-01-01' }, caller);
      await expectParity('/mcp', request('tools/list'), { ...headers, 'mcp-protocol-version': '2025-06-18' }, caller);
    }
  });

  it('malformed envelopes and params', async () => {
    const malformed: unknown[] = [
      { jsonrpc: '1.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 1.5, method: 'ping' },
      { jsonrpc: '2.0', id: null, method: 'ping' },
      { jsonrpc: '2.0', id: 1, method: 'ping', extra: true },
      { jsonrpc: '2.0', id: 1 },
      { id: 1, method: 'tools/list' },
      request('ping', 'not an object'),
      request('initialize', {}),
      request('initialize', { protocolVersion: 5, capabilities: {}, clientInfo: { name: 't', version: '1' } }),
      request('tools/list', { cursor: 5 }),
      request('tools/call', {}),
      request('tools/call', { name: 5 }),
      request('tools/call', { name: 'list_chains', arguments: 'nope' }),
      request('tools/call', { name: 'list_chains', arguments: {}, task: { ttl: 1000 } }),
      'null',
      '"a string"',
      '42',
    ];
    for (const body of malformed) {
      await expectParity('/mcp', body, {});
      await expectParity('/mcp', body, callers.owner!);
    }
    // A body that is not JSON at all, and one sent as text/plain.
    await expectParity('/mcp', '{"jsonrpc":', {});
    await expectParity('/mcp', request('ping'), { 'content-type': 'text/plain' });
  });

  it('an unknown tool and arguments a tool does not declare', async () => {
    for (const [caller, headers] of Object.entries(callers)) {
      await expectParity('/mcp', request('tools/call', { name: 'list_chain', arguments: {} }), headers, caller);
      await expectParity('/mcp', request('tools/call', { name: 'list_chains', arguments: { chainId: 1 } }), headers, caller);
      await expectParity('/mcp', request('tools/call', { name: 'list_chains' }), headers, caller);
      // A progress token from a client that takes only JSON: answered as JSON, its progress dropped, on both paths.
      await expectParity(
        '/mcp',
        request('tools/call', { name: 'list_chains', arguments: {}, _meta: { progressToken: 'p1' } }),
        { ...headers, accept: 'application/json' },
        caller,
      );
      await expectParity('/mcp', request('tools/list'), { ...headers, accept: 'application/json' }, caller);
    }
  });

  it('every MCP tool of the registry, for every kind of caller: called without arguments and with an undeclared one', async () => {
    // Tools whose empty call would do something that differs between two calls (start a run, mint a key) get only the undeclared argument.
    const readOnly = new Set(mcpTools.filter((t) => t.mcp && t.mcp.annotations.readOnlyHint).map((t) => t.name));
    let compared = 0;
    for (const tool of mcpTools) {
      for (const [caller, headers] of Object.entries(callers)) {
        if (readOnly.has(tool.name)) {
          await expectParity('/mcp', request('tools/call', { name: tool.name, arguments: {} }), headers, `${caller} ${tool.name} {}`);
        }
        await expectParity('/mcp', request('tools/call', { name: tool.name, arguments: { not_an_argument: 1 } }), headers, `${caller} ${tool.name} undeclared`);
        compared++;
      }
    }
    expect(compared).toBe(mcpTools.length * Object.keys(callers).length);
  });

  it('the per-workflow servers at /mcp/w/<slug>', async () => {
    for (const [caller, headers] of Object.entries(callers)) {
      await expectParity(
        '/mcp/w/helloworld',
        request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }),
        headers,
        caller,
      );
      await expectParity('/mcp/w/helloworld', request('tools/list'), headers, caller);
      await expectParity('/mcp/w/helloworld', request('tools/call', { name: 'not-this-one', arguments: {} }), headers, caller);
      await expectParity('/mcp/w/helloworld', request('tools/call', { name: 'helloworld', arguments: { unexpected: 1 } }), headers, caller, runNormalized);
      await expectParity('/mcp/w/no-such-workflow', request('tools/list'), headers, caller);
    }
  });

  it('a call that runs a workflow, on /mcp', async () => {
    for (const [caller, headers] of Object.entries(callers)) {
      const answer = await expectParity(
        '/mcp',
        request('tools/call', { name: 'call_workflow', arguments: { slug: 'helloworld' } }),
        headers,
        caller,
        runNormalized,
      );
      if (caller !== 'webhookKey') expect(JSON.parse(answer.body).result.structuredContent.status, caller).toBe('success');
    }
  });

  it("a run's logs, which the fast path writes from their stored text, as the SDK path writes them parsed", async () => {
    // Step data a re-made answer could get wrong: non-ASCII, line separators, escapes, and a string shaped like the splice marker.
    const code = `return { text: String.fromCharCode(0) + "${'0'.repeat(24)}:0", other: "é 😀 \\u2028 \\"q\\" \\\\", n: [1.5, null, true] };`;
    const nodes = [
      { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
      { id: 'c', type: 'action', data: { label: 'Code', config: { actionType: 'code/run-code', code } } },
    ];
    const owner = { 'content-type': 'application/json', authorization: `Bearer ${gw.ownerKey}` };
    const created = await fetch(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      headers: owner,
      body: JSON.stringify({ name: 'stored logs', nodes, edges: [{ id: 'e', source: 't', target: 'c' }] }),
    }).then((r) => r.json() as Promise<{ id: string }>);
    const { executionId } = await fetch(`${gw.url}/api/workflows/${created.id}/execute`, { method: 'POST', headers: owner, body: '{}' }).then(
      (r) => r.json() as Promise<{ executionId: string }>,
    );
    await fetch(`${gw.url}/api/workflows/executions/${executionId}/wait`, { headers: owner });
    const answer = await expectParity(
      '/mcp',
      request('tools/call', { name: 'get_execution', arguments: { executionId, truncateData: false } }),
      callers.owner,
      'get_execution, whole data',
    );
    const result = JSON.parse(answer.body).result;
    const step = (logs: { nodeId: string; output: any }[]) => logs.find((l) => l.nodeId === 'c')!.output.data.result;
    expect(step(result.structuredContent.logs)).toEqual({ text: `\u0000${'0'.repeat(24)}:0`, other: 'é 😀 \u2028 "q" \\', n: [1.5, null, true] });
    expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent);
    // GET .../logs (REST only) writes the same stored text.
    const rest = await fetch(`${gw.url}/api/workflows/executions/${executionId}/logs`, { headers: owner }).then((r) => r.json() as Promise<{ logs: any[] }>);
    expect(rest.logs).toEqual(result.structuredContent.logs);
  });

  it('a paid call without payment: the isError result, and the MPP error form (-32042) for callers announcing MPP', async () => {
    const call = request('tools/call', { name: 'call_workflow', arguments: { slug: 'microtip' } });
    const plain = await expectParity('/mcp', call, {}, 'result form', challengeNormalized);
    expect(JSON.parse(plain.body).result.isError).toBe(true);
    const mpp = await expectParity('/mcp', call, { 'accept-payment': 'evm/charge' }, 'MPP form', challengeNormalized);
    expect(JSON.parse(mpp.body).error.code).toBe(-32042);
  });
});
