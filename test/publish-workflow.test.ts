import { afterAll, beforeAll, describe, expect, it, test } from 'vitest';
import { migrate } from '../src/store/db.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { getListing } from '../src/catalog/listings.ts';
import { fetchJson, openTestStore, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/** publish_workflow / unlist_workflow over REST and MCP: an organization lists its own workflow under a slug. */

let gw: TestGateway;
let key: string;
let otherKey: string;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  key = await gw.createKey({ scope: 'mcp:write', org: 'publisher' });
  otherKey = await gw.createKey({ scope: 'mcp:write', org: 'someone-else' });
});
afterAll(() => gw.close());

const greeter = {
  nodes: [
    { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', config: { triggerType: 'Manual' } } },
    {
      id: 'greet',
      type: 'action',
      data: { label: 'Greet', config: { actionType: 'code/run-code', code: "return { greeting: 'hi ' + {{@trigger:Manual Trigger.name}} };" } },
    },
  ],
  edges: [{ id: 'e0', source: 'trigger', target: 'greet' }],
};

async function createWorkflow(withKey = key, name = 'Greeter'): Promise<string> {
  const res = await fetchJson(`${gw.url}/api/workflows/create`, {
    method: 'POST',
    key: withKey,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, ...greeter }),
  });
  expect(res.status).toBeLessThan(300);
  return res.body.id;
}

const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 40 } }, required: ['name'], additionalProperties: false };
const publish = (workflowId: string, body: Record<string, unknown>, withKey = key) =>
  fetchJson(`${gw.url}/api/workflows/${workflowId}/listing`, {
    method: 'POST',
    key: withKey,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const unlist = (workflowId: string, withKey = key) => fetchJson(`${gw.url}/api/workflows/${workflowId}/listing`, { method: 'DELETE', key: withKey });
const call = (slug: string, body: unknown) =>
  fetchJson(`${gw.url}/api/mcp/workflows/${slug}/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('publish_workflow over REST', () => {
  it('lists a free workflow: it appears in GET /api/mcp/workflows, is callable, has its own MCP server; unlisting removes it', async () => {
    const workflowId = await createWorkflow();
    const res = await publish(workflowId, {
      slug: 'friendly-greeter',
      description: 'Greets by name.',
      price: null,
      inputSchema: schema,
      outputFields: { greeting: 'string' },
      result: { nodeId: 'greet', path: 'result' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: 'friendly-greeter', type: 'read', free: true, price: null, workflowId, mcpUrl: `${gw.url}/mcp/w/friendly-greeter` });

    const list = await fetchJson(`${gw.url}/api/mcp/workflows`);
    expect(list.body.workflows.map((w: { slug: string }) => w.slug)).toContain('friendly-greeter');

    const ok = await call('friendly-greeter', { name: 'Ada' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'success', output: { result: { greeting: 'hi Ada' } } });
    const bad = await call('friendly-greeter', { name: 'Ada', extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.issues[0].path).toBe('extra');

    const client = new Client({ name: 'publish-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp/w/friendly-greeter`)));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['friendly-greeter']);
    expect(tools[0]!.inputSchema).toMatchObject({ required: ['name'] });
    await client.close();

    const removed = await unlist(workflowId);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true, workflowId, slug: 'friendly-greeter' });
    expect((await call('friendly-greeter', { name: 'Ada' })).status).toBe(404);
    expect((await fetchJson(`${gw.url}/api/mcp/workflows`)).body.workflows.map((w: { slug: string }) => w.slug)).not.toContain('friendly-greeter');
    expect(
      (
        await fetch(`${gw.url}/mcp/w/friendly-greeter`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        })
      ).status,
    ).toBe(404);
    expect((await unlist(workflowId)).status).toBe(404);

    // Publishing again relists it under the same slug.
    expect((await publish(workflowId, { slug: 'friendly-greeter', description: 'Greets by name.', price: null, inputSchema: schema })).status).toBe(200);
    expect((await call('friendly-greeter', { name: 'Bo' })).status).toBe(200);
  });

  it('stores a paid price exactly and pays into the publishing organization wallet', async () => {
    const workflowId = await createWorkflow();
    const res = await publish(workflowId, { slug: 'paid-greeter', description: 'Greets for a fee.', price: '0.000001', inputSchema: schema });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ free: false, price: { mode: 'fixed', amount: '0.000001', currency: 'USD' } });
    expect((await getListing(gw.gateway.services.store, 'paid-greeter')).price).toBe('0.000001');
  });

  it('refuses bad slugs, prices, schemas and types with 400 naming the field', async () => {
    const workflowId = await createWorkflow();
    const base = { slug: 'good-slug', description: 'x', price: null, inputSchema: schema };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ slug: 'Bad_Slug' }, /slug/],
      [{ slug: 'double--hyphen' }, /slug/],
      [{ price: 0.05 }, /price/],
      [{ price: '0.0000001' }, /price/],
      [{ price: '0' }, /price/],
      [{ price: '1000.01' }, /maximum/],
      [{ price: '-1' }, /price/],
      [{ inputSchema: { type: 'array' } }, /inputSchema/],
      [{ inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } }, /inputSchema/],
      [{ inputSchema: { type: 'object', required: 'name' } }, /inputSchema/],
      [{ type: 'write' }, /write-contract/],
      // Calldata is answered without a run to charge for: a price there was advertised and never asked.
      [{ type: 'write', price: '5' }, /cannot be priced/],
    ];
    for (const [override, pattern] of cases) {
      const res = await publish(workflowId, { ...base, ...override });
      expect(res.status, JSON.stringify(override)).toBe(400);
      expect(JSON.stringify(res.body), JSON.stringify(override)).toMatch(pattern);
    }
    expect((await fetchJson(`${gw.url}/api/mcp/workflows`)).body.workflows.map((w: { slug: string }) => w.slug)).not.toContain('good-slug');
  });

  it('a listed workflow stays enabled: a disabled one is not listed, and a listed one is not disabled (every call would be 410)', async () => {
    const workflowId = await createWorkflow();
    const patch = (enabled: boolean) =>
      fetchJson(`${gw.url}/api/workflows/${workflowId}`, {
        method: 'PATCH',
        key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enabled }),
      });
    const listing = { slug: 'stays-enabled', description: 'x', price: null, inputSchema: schema };
    expect((await patch(false)).status).toBe(200);
    const refused = await publish(workflowId, listing);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toContain('is disabled');
    expect((await patch(true)).status).toBe(200);
    expect((await publish(workflowId, listing)).status).toBe(200);
    const disable = await patch(false);
    expect(disable.status).toBe(409);
    expect(disable.body).toMatchObject({ code: 'conflict', listing: 'stays-enabled' });
    expect(disable.body.error).toContain('Unlist it first');
    expect((await call('stays-enabled', { name: 'ada' })).status).toBe(200);
    // Another organization's id reveals nothing: the same 404 as any unknown workflow.
    const foreign = await fetchJson(`${gw.url}/api/workflows/${workflowId}`, {
      method: 'PATCH',
      key: otherKey,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: false }),
    });
    expect(foreign.status).toBe(404);
    expect((await unlist(workflowId)).status).toBe(200);
    expect((await patch(false)).status).toBe(200);
  });

  it('409 with a suggestion on a taken slug; the catalog slugs and other organizations’ workflows are out of reach', async () => {
    const mine = await createWorkflow();
    const catalogTaken = await publish(mine, { slug: 'microtip', description: 'mine now', price: '0.01', inputSchema: schema });
    expect(catalogTaken.status).toBe(409);
    expect(catalogTaken.body).toMatchObject({ code: 'slug_taken', suggestion: 'microtip-2' });
    expect((await getListing(gw.gateway.services.store, 'microtip')).source).toBe('catalog');

    expect((await publish(mine, { slug: 'first-come', description: 'a', price: null, inputSchema: schema })).status).toBe(200);
    const theirs = await createWorkflow(otherKey);
    const taken = await publish(theirs, { slug: 'first-come', description: 'b', price: null, inputSchema: schema }, otherKey);
    expect(taken.status).toBe(409);
    expect(taken.body.suggestion).toBe('first-come-2');

    // Another organization's workflow is not found, to publish or to unlist.
    expect((await publish(mine, { slug: 'hijack', description: 'x', price: null, inputSchema: schema }, otherKey)).status).toBe(404);
    expect((await unlist(mine, otherKey)).status).toBe(404);
    const catalogWorkflow = (await getListing(gw.gateway.services.store, 'microtip')).workflowId;
    expect((await unlist(catalogWorkflow, otherKey)).status).toBe(404);
    expect((await publish(catalogWorkflow, { slug: 'microtip', description: 'x', price: null, inputSchema: schema }, otherKey)).status).toBe(404);
    expect((await call('first-come', { name: 'x' })).status).toBe(200);
  });

  it('needs mcp:write', async () => {
    const readKey = await gw.createKey({ scope: 'mcp:read', org: 'publisher' });
    const workflowId = await createWorkflow();
    expect((await publish(workflowId, { slug: 'read-only', description: 'x', price: null, inputSchema: schema }, readKey)).status).toBe(403);
    expect((await publish(workflowId, { slug: 'anon', description: 'x', price: null, inputSchema: schema }, '')).status).toBe(401);
  });
});

describe('publish_workflow / unlist_workflow over MCP', () => {
  it('publishes, calls through call_workflow and unlists', async () => {
    const workflowId = await createWorkflow();
    const client = await connectMcp(gw.url, key);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['publish_workflow', 'unlist_workflow', 'get_workflow_listing']));
    const published = await callTool(client, 'publish_workflow', {
      workflowId,
      slug: 'mcp-greeter',
      description: 'Greets over MCP.',
      price: null,
      inputSchema: schema,
      result: { nodeId: 'greet', path: 'result' },
    });
    expect(published.isError).toBe(false);
    expect(published.structured).toMatchObject({ slug: 'mcp-greeter', free: true });
    const called = await callTool(client, 'call_workflow', { slug: 'mcp-greeter', inputs: { name: 'Cy' } });
    expect(called.structured).toMatchObject({ status: 'success', output: { result: { greeting: 'hi Cy' } } });
    const taken = await callTool(client, 'publish_workflow', {
      workflowId: await createWorkflow(),
      slug: 'mcp-greeter',
      description: 'x',
      price: null,
      inputSchema: schema,
    });
    expect(taken.isError).toBe(true);
    expect(taken.body).toMatchObject({ code: 'slug_taken', suggestion: 'mcp-greeter-2' });
    const removed = await callTool(client, 'unlist_workflow', { workflowId });
    expect(removed.structured).toEqual({ success: true, workflowId, slug: 'mcp-greeter' });
    const gone = await callTool(client, 'get_workflow_listing', { slug: 'mcp-greeter' });
    expect(gone.isError).toBe(true);
    await client.close();
  });
});

// On the store FLOWGATE_TEST_DATABASE selects (SQLite, or PostgreSQL).
test('migration 036 takes the price off write listings saved before (it was advertised, never charged); read listings keep theirs', async () => {
  const store = await openTestStore();
  await migrate(store, '035_oauth_token_scope');
  const at = new Date().toISOString();
  await store.insertInto('organizations').values({ id: 'org', slug: 'org', name: 'Org', created_at: at }).execute();
  for (const id of ['w-write', 'w-read']) {
    await store
      .insertInto('workflows')
      .values({ id, organization_id: 'org', name: id, visibility: 'public', nodes: '[]', edges: '[]', enabled: 1, featured: 0, created_at: at, updated_at: at })
      .execute();
  }
  const listing = (slug: string, workflowId: string, type: 'read' | 'write') => ({
    slug,
    workflow_id: workflowId,
    organization_id: 'org',
    source: 'published' as const,
    title: slug,
    description: 'x',
    workflow_type: type,
    chain_id: null,
    price: '5',
    input_schema: '{"type":"object"}',
    output_fields: '{}',
    result_source: null,
    protocols: '[]',
    listed: 1,
    created_at: at,
    updated_at: at,
  });
  await store
    .insertInto('workflow_listings')
    .values([listing('paid-write', 'w-write', 'write'), listing('paid-read', 'w-read', 'read')])
    .execute();
  await migrate(store);
  const prices = await store.selectFrom('workflow_listings').select(['slug', 'price']).orderBy('slug').execute();
  expect(prices).toEqual([
    { slug: 'paid-read', price: '5' },
    { slug: 'paid-write', price: null },
  ]);
  await store.destroy();
});
