import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { RESPONSE_POINT_BYTES } from '../src/http/rest.ts';

/**
 * Every REST request an organization's credentials make counts against one
 * budget (FLOWGATE_RATE_LIMIT_REST_PER_ORG, 8 a minute here), as MCP requests
 * already did: before it, one tenant's keys could read as fast as the shared
 * process answered. Other organizations, anonymous reads, MCP (its own
 * budget) and webhook calls go on.
 */

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_REST_PER_ORG: '8' } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const get = (path: string, key?: string) => fetchJson(`${gw.url}${path}`, key ? { key } : {});
const post = (path: string, key: string, body: unknown) => fetchJson(`${gw.url}${path}`, { method: 'POST', key, body: JSON.stringify(body) });

describe('REST requests per organization', () => {
  it('refuses the request past the budget across the organization’s keys, with headers and a way out; others go on', async () => {
    const secondKey = await gw.createKey({ name: 'second key of the same organization' });
    const otherOrganization = await gw.createKey({ org: 'tenant-b' });
    // Spent on the way: a webhook key and a Webhook workflow, to show webhook calls are not counted.
    const webhookKey = (await post('/api/api-keys', gw.ownerKey, { name: 'hook' })).body.key as string;
    const created = await post('/api/workflows/create', secondKey, {
      name: 'hooked',
      nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Webhook' } } }],
      edges: [],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);

    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await get('/api/workflows', i % 2 ? secondKey : gw.ownerKey));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(answers.map((a) => a.headers.get('x-ratelimit-remaining'))).toEqual(['5', '4', '3', '2', '1', '0']);
    expect(answers[5]!.headers.get('x-ratelimit-limit')).toBe('8');

    const refused = await get('/api/workflows/executions', secondKey);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', limit: 8 });
    expect(refused.body.error).toContain('REST API requests per organization per minute');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    // Writes too, and nothing is written.
    const write = await post('/api/projects', gw.ownerKey, { name: 'past the budget' });
    expect(write.status).toBe(429);

    // Another organization, anonymous reads, MCP and the webhook go on.
    expect((await get('/api/workflows', otherOrganization)).status).toBe(200);
    expect((await get('/api/workflows/search?query=x')).status).toBe(200);
    const overMcp = await fetchJson(`${gw.url}/mcp`, {
      method: 'POST',
      key: gw.ownerKey,
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_projects', arguments: {} } }),
    });
    expect(overMcp.status).toBe(200);
    expect(JSON.parse(overMcp.body.result.content[0].text)).toEqual({ projects: [] });
    const hooked = await post(`/api/workflows/${created.body.id}/webhook`, webhookKey, { any: 'body' });
    expect(hooked.status, JSON.stringify(hooked.body)).toBe(200);
  }, 60_000);
});

describe('REST requests without a credential', () => {
  it('count per IP, a large public list more, and past the budget get 429 while health checks and keyed callers go on', async () => {
    const open = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP: '20' } });
    try {
      const anonymous = (path: string) => fetchJson(`${open.url}${path}`);
      // A public workflow of about 200 KB of graph: the public list that holds it costs a few more points.
      const created = await fetchJson(`${open.url}/api/workflows/create`, {
        method: 'POST',
        key: open.ownerKey,
        body: JSON.stringify({
          name: 'large public',
          nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual', note: 'n'.repeat(200_000) } } }],
          edges: [],
        }),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const live = await fetchJson(`${open.url}/api/workflows/${created.body.id}/go-live`, {
        method: 'PUT',
        key: open.ownerKey,
        body: JSON.stringify({ name: 'Large public' }),
      });
      expect(live.status, JSON.stringify(live.body)).toBe(200);

      const first = await anonymous('/api/chains');
      expect(first.status).toBe(200);
      expect(first.headers.get('x-ratelimit-limit')).toBe('20');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('19');
      const list = await anonymous('/api/workflows/public');
      expect(list.status).toBe(200);
      const extra = Math.floor(Number(list.headers.get('content-length')) / RESPONSE_POINT_BYTES);
      expect(extra).toBeGreaterThanOrEqual(3);
      expect((await anonymous('/api/public-tags')).headers.get('x-ratelimit-remaining')).toBe(String(20 - 3 - extra));

      const answers = [];
      for (let i = 0; i < 20 && answers.at(-1)?.status !== 429; i++) answers.push(await anonymous('/.well-known/mcp.json'));
      const refused = answers.at(-1)!;
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ code: 'rate_limited', limit: 20 });
      expect(refused.body.error).toContain('REST API requests without a credential per IP per minute');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      // What was left, then the refusal.
      expect(answers.length).toBe(20 - 3 - extra + 1);

      // A load balancer's health check from the same address, and a caller with a key, are not counted here.
      const health = await anonymous('/healthz');
      expect(health.status).toBe(200);
      expect(health.headers.get('x-ratelimit-limit')).toBeNull();
      expect((await fetchJson(`${open.url}/api/workflows/public`, { key: open.ownerKey })).status).toBe(200);
    } finally {
      await open.close();
    }
  }, 60_000);
});

describe('a large answer', () => {
  it('costs one more point per 64 KiB it holds, and a copy still current (304) does not', async () => {
    const roomy = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_REST_PER_ORG: '100' } });
    try {
      const call = (path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${roomy.url}${path}`, { key: roomy.ownerKey, ...init });
      const created = await call('/api/workflows/create', {
        method: 'POST',
        body: JSON.stringify({
          name: 'large',
          nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual', note: 'n'.repeat(240_000) } } }],
          edges: [],
        }),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const before = Number((await call('/api/projects')).headers.get('x-ratelimit-remaining'));
      const list = await call('/api/workflows');
      expect(list.status).toBe(200);
      // The answer's own headers were written before it was sent: one point.
      expect(Number(list.headers.get('x-ratelimit-remaining'))).toBe(before - 1);
      const extra = Math.floor(Number(list.headers.get('content-length')) / RESPONSE_POINT_BYTES);
      expect(extra).toBe(3);
      const after = Number((await call('/api/projects')).headers.get('x-ratelimit-remaining'));
      expect(after).toBe(before - 1 - extra - 1);
      // Asked again with the ETag it has: 304, no body, one point. (fetch sends `Cache-Control: no-cache` with a conditional request unless told otherwise.)
      const again = await fetch(`${roomy.url}/api/workflows`, {
        headers: { authorization: `Bearer ${roomy.ownerKey}`, 'if-none-match': list.headers.get('etag')!, 'cache-control': 'max-age=0' },
      });
      expect(again.status).toBe(304);
      expect(Number((await call('/api/projects')).headers.get('x-ratelimit-remaining'))).toBe(after - 2);
    } finally {
      await roomy.close();
    }
  }, 60_000);
});
