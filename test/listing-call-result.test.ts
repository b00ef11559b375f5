import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * A listed call that outlasts the call's wait answers `running` with a resultUrl any caller can follow: the
 * organization's own wait route is closed to callers of other organizations and to anonymous ones, so before, the
 * answer of a slow call (a paid one included) could not be had at all.
 */

let gw: TestGateway;
let target: { url: string; release(): void; close(): Promise<void> };
let publisherKey: string;
let callerKey: string;

/** Answers every request once released. */
async function startHeldTarget() {
  let released = false;
  const waiting: http.ServerResponse[] = [];
  const answer = (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ price: 42 }));
  const server = http.createServer((_req, res) => (released ? answer(res) : waiting.push(res)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    release() {
      released = true;
      for (const res of waiting.splice(0)) answer(res);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  target = await startHeldTarget();
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' } });
  publisherKey = await gw.createKey({ org: 'publisher' });
  callerKey = await gw.createKey({ org: 'caller' });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await target?.close();
});

describe('a listed call that outlasts its wait', () => {
  it('answers running with a resultUrl that anyone holding the executionId can follow to the result; nothing else is read there', async () => {
    const created = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      key: publisherKey,
      body: JSON.stringify({
        name: 'Slow quote',
        nodes: [
          { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
          {
            id: 'q',
            type: 'action',
            data: { label: 'Quote', config: { actionType: 'HTTP Request', endpoint: `${target.url}/quote`, httpMethod: 'GET', timeout: 60000 } },
          },
        ],
        edges: [{ source: 't', target: 'q' }],
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const workflowId = created.body.id;
    const listing = { slug: 'slow-quote', description: 'A quote that takes a while', price: null, inputSchema: { type: 'object' } };
    expect(
      (await fetchJson(`${gw.url}/api/workflows/${workflowId}/listing`, { method: 'POST', key: publisherKey, body: JSON.stringify(listing) })).status,
    ).toBe(200);

    // Another organization calls it; the target holds the answer past the call's 15 s wait.
    const call = await fetchJson(`${gw.url}/api/mcp/workflows/slow-quote/call`, { method: 'POST', key: callerKey, body: '{}' });
    expect(call.status).toBe(200);
    expect(call.body.status).toBe('running');
    const { executionId, resultUrl } = call.body;
    expect(resultUrl).toBe(`${gw.url}/api/mcp/workflows/slow-quote/calls/${executionId}`);
    expect(call.body.hint).toContain(resultUrl);
    // The organization's wait route is not the caller's: that is why the resultUrl exists.
    expect((await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/wait?timeoutMs=1`, { key: callerKey })).status).toBe(404);
    expect((await fetchJson(`${resultUrl}?timeoutMs=0`)).body).toMatchObject({ executionId, status: 'running' });

    target.release();
    const done = await fetchJson(`${resultUrl}?timeoutMs=20000`);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ executionId, status: 'success', output: { result: { price: 42 } } });

    // Only runs started by calls of this listing: not under another slug, not the publisher's own runs.
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/no-such-slug/calls/${executionId}`)).status).toBe(404);
    const own = await fetchJson(`${gw.url}/api/workflows/${workflowId}/execute`, { method: 'POST', key: publisherKey, body: '{}' });
    expect(own.status).toBe(200);
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/slow-quote/calls/${own.body.executionId}?timeoutMs=0`)).status).toBe(404);
  }, 60_000);
});
