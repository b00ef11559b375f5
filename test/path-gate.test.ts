import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * The docs, dashboard, OAuth and MCP routers are skipped by paths outside
 * them (src/http/path-gate.ts). Express matches paths ignoring case and a
 * trailing slash, so those spellings must still reach each router.
 */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

const answer = async (path: string, init: RequestInit = {}) => {
  const response = await fetch(`${gw.url}${path}`, { redirect: 'manual', ...init });
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
};

const initialize = {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  }),
};

describe('routers behind a path gate', () => {
  it('answer other spellings of their paths as before', async () => {
    for (const [usual, other] of [
      ['/docs', '/DOCS'],
      ['/docs', '/docs/'],
      ['/llms.txt', '/LLMS.txt'],
      ['/app', '/App/'],
      ['/authorize', '/AUTHORIZE'],
    ] as const) {
      const [a, b] = [await answer(usual), await answer(other)];
      expect({ path: other, status: b.status, type: b.type }).toEqual({ path: other, status: a.status, type: a.type });
    }
    const mcp = await answer('/MCP', initialize);
    expect(mcp.status).toBe(200);
    expect(JSON.parse(mcp.body).result.serverInfo.name).toBe('flowgate');
    expect((await answer('/Mcp/')).status).toBe(405);
  });

  it('leave every other path to the routes after them', async () => {
    expect((await answer('/api/chains')).status).toBe(200);
    const missing = await answer('/documents');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).code).toBe('not_found');
  });
});
