import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * An organization holds at most FLOWGATE_MAX_WORKFLOWS_PER_ORG workflows (3
 * here). Each is up to a request body of stored graph, so without a bound one
 * key could fill the shared database's disk. Creating, duplicating and
 * claiming past it are refused with nothing written; another organization is
 * not affected, and deleting one makes room again.
 */

let gw: TestGateway;
let keyB: string;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_MAX_WORKFLOWS_PER_ORG: '3', FLOWGATE_RATE_LIMITS: 'off' } });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const graph = {
  nodes: [
    { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
    { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } },
  ],
  edges: [{ id: 'e', source: 't', target: 's' }],
};
const create = (key: string | undefined, name: string) =>
  fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', ...(key ? { key } : {}), body: JSON.stringify({ name, ...graph }) });
const count = async (key: string) => ((await fetchJson(`${gw.url}/api/workflows`, { key })).body as unknown[]).length;

describe('workflows per organization', () => {
  it('refuses create, duplicate and claim past the bound with 409 quota_exceeded and nothing written; deleting one makes room', async () => {
    const existing = await count(gw.ownerKey);
    expect(existing).toBeLessThanOrEqual(3);
    const made: string[] = [];
    for (let i = existing; i < 3; i++) {
      const res = await create(gw.ownerKey, `w${i}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      made.push(res.body.id);
    }
    expect(await count(gw.ownerKey)).toBe(3);

    const refused = await create(gw.ownerKey, 'one too many');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'quota_exceeded', limit: 3, resource: 'workflows' });
    expect(refused.body.error).toContain('already holds 3 workflows (FLOWGATE_MAX_WORKFLOWS_PER_ORG)');
    const [first] = (await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey })).body as { id: string }[];
    const duplicated = await fetchJson(`${gw.url}/api/workflows/${first!.id}/duplicate`, { method: 'POST', key: gw.ownerKey });
    expect(duplicated.status).toBe(409);
    expect(duplicated.body.code).toBe('quota_exceeded');

    // An anonymous workflow cannot be claimed into the full organization; it stays claimable.
    const anonymous = await create(undefined, 'anonymous');
    expect(anonymous.status).toBe(200);
    const claim = () =>
      fetchJson(`${gw.url}/api/workflows/${anonymous.body.id}/claim`, {
        method: 'POST',
        key: gw.ownerKey,
        body: JSON.stringify({ claimToken: anonymous.body.claimToken }),
      });
    const claimRefused = await claim();
    expect(claimRefused.status).toBe(409);
    expect(claimRefused.body.code).toBe('quota_exceeded');

    // Over MCP the same refusal, as a tool error.
    const mcp = await connectMcp(gw.url, gw.ownerKey);
    try {
      const result = await callTool(mcp, 'create_workflow', { name: 'over mcp', ...graph });
      expect(result.isError).toBe(true);
      expect(result.body).toMatchObject({ code: 'quota_exceeded', limit: 3 });
    } finally {
      await mcp.close();
    }
    expect(await count(gw.ownerKey)).toBe(3);

    // Another organization is not held back.
    expect((await create(keyB, 'b')).status).toBe(200);

    // Deleting one makes room: the claim now goes through.
    const removed = await fetchJson(`${gw.url}/api/workflows/${first!.id}?force=true`, { method: 'DELETE', key: gw.ownerKey });
    expect(removed.status).toBe(200);
    expect((await claim()).status).toBe(200);
    expect(await count(gw.ownerKey)).toBe(3);
  }, 60_000);
});

describe('unclaimed anonymous workflows across the deployment', () => {
  let bounded: TestGateway;
  beforeAll(async () => {
    bounded = await startTestGateway({ env: { FLOWGATE_MAX_UNCLAIMED_WORKFLOWS: '2', FLOWGATE_RATE_LIMITS: 'off' } });
  }, 60_000);
  afterAll(async () => {
    await bounded?.close();
  });

  const createOn = (key: string | undefined, name: string) =>
    fetchJson(`${bounded.url}/api/workflows/create`, { method: 'POST', ...(key ? { key } : {}), body: JSON.stringify({ name, ...graph }) });
  const unclaimed = async () =>
    (await bounded.gateway.services.store.selectFrom('workflows').select('id').where('organization_id', 'is', null).execute()).length;

  it('past FLOWGATE_MAX_UNCLAIMED_WORKFLOWS refuse the next anonymous create with 429 and Retry-After, saving nothing; keys and claims are not held back', async () => {
    // Every address counts toward one bound: the per-IP limit is off here, as if each came from its own address.
    const first = await createOn(undefined, 'a1');
    expect(first.status).toBe(200);
    expect((await createOn(undefined, 'a2')).status).toBe(200);

    const refused = await createOn(undefined, 'a3');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', limit: 2, retryAfterSeconds: 3600 });
    expect(refused.headers.get('retry-after')).toBe('3600');
    expect(refused.body.error).toContain('FLOWGATE_MAX_UNCLAIMED_WORKFLOWS');
    expect(refused.body.error).toContain('API key');
    expect(await unclaimed()).toBe(2);

    // With a key the workflow is the organization's, which its own quota bounds.
    expect((await createOn(bounded.ownerKey, 'owned')).status).toBe(200);

    // A claim makes room for the next anonymous one.
    const claimed = await fetchJson(`${bounded.url}/api/workflows/${first.body.id}/claim`, {
      method: 'POST',
      key: bounded.ownerKey,
      body: JSON.stringify({ claimToken: first.body.claimToken }),
    });
    expect(claimed.status).toBe(200);
    expect((await createOn(undefined, 'a3 again')).status).toBe(200);
    expect(await unclaimed()).toBe(2);
  }, 60_000);
});
