import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { balanceGraph, createWorkflowViaApi, insertExecution } from './helpers/workflows.ts';

let gw: TestGateway;
let key: string;
let readKey: string;
let otherKey: string;
const INTERNAL_SECRET = 'internal-secret-for-tests-0123456789abcdef';

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_INTERNAL_SERVICE_SECRET: INTERNAL_SECRET } });
  key = gw.ownerKey;
  readKey = await gw.createKey({ scope: 'mcp:read' });
  otherKey = await gw.createKey({ org: 'rival' });
});
afterAll(() => gw.close());

const api = (p: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${p}`, { key, ...init });
const post = (p: string, body: unknown, k = key) => fetchJson(`${gw.url}${p}`, { method: 'POST', key: k, body: JSON.stringify(body) });
const organizationId = async () => (await api('/api/keys')).body.organization.id as string;

describe('create and read', () => {
  it('normalizes on save: plugin slug → config.actionType, data.type, status and position assigned, ids kept', async () => {
    const created = await createWorkflowViaApi(gw.url, key);
    expect(created).toMatchObject({ name: 'Balance check', visibility: 'private', enabled: true, projectId: null, tagId: null, warnings: [] });
    const action = created.nodes.find((n: any) => n.id === 'balance');
    expect(action.type).toBe('action');
    expect(action.data.type).toBe('action');
    expect(action.data.config.actionType).toBe('web3/check-balance');
    expect(action.data.status).toBeTruthy();
    expect(action.position).toEqual({ x: expect.any(Number), y: expect.any(Number) });
    expect(created.edges[0]).toMatchObject({ id: 'e1', source: 'trigger', target: 'balance' });

    const fetched = await api(`/api/workflows/${created.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({ id: created.id, publicTags: [], isOwner: true, nodes: created.nodes });
  });

  it('creates the documented default from empty nodes: a trigger connected to an empty action', async () => {
    const res = await post('/api/workflows/create', { name: 'Blank', nodes: [], edges: [] });
    expect(res.status).toBe(200);
    const [trigger, action] = [res.body.nodes.find((n: any) => n.type === 'trigger'), res.body.nodes.find((n: any) => n.type === 'action')];
    expect(trigger).toBeTruthy();
    expect(action).toBeTruthy();
    expect(res.body.nodes).toHaveLength(2);
    expect(res.body.edges).toEqual([expect.objectContaining({ source: trigger.id, target: action.id })]);
  });

  it('refuses an invalid graph with every problem at once and writes nothing', async () => {
    const before = (await api('/api/workflows')).body.length;
    const res = await post('/api/workflows/create', {
      name: 'Broken',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        { id: 'c', type: 'action', data: { label: 'Check', config: { actionType: 'condition' } } },
        {
          id: 'w',
          type: 'action',
          data: {
            label: 'Write',
            config: {
              actionType: 'web3/write-contract',
              network: '8453',
              contractAddress: '0x000000000000000000000000000000000000dEaD',
              abi: [],
              abiFunction: 'f',
            },
          },
        },
      ],
      edges: [
        { source: 't', target: 'c' },
        { source: 'c', target: 'ghost' },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_workflow');
    const codes = res.body.invalidFields.map((f: any) => f.code);
    expect(codes).toEqual(expect.arrayContaining(['unknown_action_type', 'abi_not_string', 'unknown_edge_target']));
    const unknownType = res.body.invalidFields.find((f: any) => f.code === 'unknown_action_type');
    expect(unknownType).toMatchObject({ nodeId: 'c', nodeLabel: 'Check', received: 'condition', suggestion: 'Condition' });
    expect(unknownType.path).toContain('actionType');
    expect((await api('/api/workflows')).body.length).toBe(before);
  });

  it('refuses hostile input with a 4xx, never a 500', async () => {
    const many = { name: 'Huge', nodes: Array.from({ length: 10_000 }, (_, i) => ({ id: `n${i}`, type: 'action', data: {} })), edges: [] };
    const huge = await post('/api/workflows/create', many);
    expect([400, 413]).toContain(huge.status);
    let deep: any = { leaf: true };
    for (let i = 0; i < 200; i++) deep = { deep };
    const nested = await post('/api/workflows/create', {
      name: 'Deep',
      nodes: [{ id: 't', type: 'trigger', data: { config: { triggerType: 'Manual', deep } } }],
      edges: [],
    });
    expect(nested.status).toBe(400);
    const longString = await post('/api/workflows/create', { name: 'x'.repeat(2_000_000), nodes: [], edges: [] });
    expect(longString.status).toBe(413);
    const wrongTypes = await post('/api/workflows/create', { name: 42, nodes: 'none', edges: {} });
    expect(wrongTypes.status).toBe(400);
    expect(wrongTypes.body.issues.map((i: any) => i.path)).toEqual(expect.arrayContaining(['name', 'nodes', 'edges']));
    const notObject = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key, body: '[1,2]' });
    expect(notObject.status).toBe(400);
  });

  it('needs mcp:write to create and refuses unknown project or tag ids naming the field', async () => {
    const denied = await post('/api/workflows/create', { name: 'n', ...balanceGraph() }, readKey);
    expect(denied.status).toBe(403);
    const badProject = await post('/api/workflows/create', { name: 'n', ...balanceGraph(), projectId: 'nope' });
    expect(badProject.status).toBe(400);
    expect(badProject.body.error).toContain('projectId');
  });
});

describe('listing and pagination', () => {
  let ids: string[];
  let listGw: TestGateway;
  beforeAll(async () => {
    listGw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
    ids = [];
    for (let i = 0; i < 5; i++) ids.push((await createWorkflowViaApi(listGw.url, listGw.ownerKey, { name: `wf ${i}` })).id);
  });
  afterAll(() => listGw.close());
  const list = (query: string) => fetchJson(`${listGw.url}/api/workflows${query}`, { key: listGw.ownerKey });

  it('returns everything without limit, newest first, as a bare array', async () => {
    const res = await list('');
    expect(res.status).toBe(200);
    expect(res.body.map((w: any) => w.id)).toEqual([...ids].reverse());
  });

  it('pages with limit and offset without skipping or repeating', async () => {
    const pages = [];
    for (let offset = 0; offset < 6; offset += 2) pages.push(...(await list(`?limit=2&offset=${offset}`)).body.map((w: any) => w.id));
    expect(pages).toEqual([...ids].reverse());
    expect((await list('?limit=2&offset=4')).body).toHaveLength(1);
    expect((await list('?limit=200')).body).toHaveLength(5);
  });

  it.each([
    '?limit=0',
    '?limit=201',
    '?limit=0x10',
    '?limit=1e1',
    '?limit=%202',
    '?limit=2%20',
    '?limit=-1',
    '?limit=1.5',
    '?offset=1',
    '?limit=2&offset=-1',
    '?limit=2&offset=abc',
  ])('refuses %s with 400 invalid_input', async (query) => {
    const res = await list(query);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_input');
  });

  it('filters by projectId and tagId', async () => {
    const project = await fetchJson(`${listGw.url}/api/projects`, { method: 'POST', key: listGw.ownerKey, body: JSON.stringify({ name: 'P' }) });
    const tag = await fetchJson(`${listGw.url}/api/tags`, { method: 'POST', key: listGw.ownerKey, body: JSON.stringify({ name: 'T', color: '#ff0000' }) });
    await fetchJson(`${listGw.url}/api/workflows/${ids[0]}`, {
      method: 'PATCH',
      key: listGw.ownerKey,
      body: JSON.stringify({ projectId: project.body.id, tagId: tag.body.id }),
    });
    expect((await list(`?projectId=${project.body.id}`)).body.map((w: any) => w.id)).toEqual([ids[0]]);
    expect((await list(`?tagId=${tag.body.id}`)).body.map((w: any) => w.id)).toEqual([ids[0]]);
  });
});

describe('update, duplicate, download, code, delete', () => {
  it('patches only given fields, re-validates graphs and leaves the record untouched on refusal', async () => {
    const wf = await createWorkflowViaApi(gw.url, key);
    const renamed = await api(`/api/workflows/${wf.id}`, { method: 'PATCH', body: JSON.stringify({ name: 'Renamed', enabled: false }) });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'Renamed', enabled: false, nodes: wf.nodes });

    const broken = await api(`/api/workflows/${wf.id}`, {
      method: 'PATCH',
      body: JSON.stringify({ edges: [{ source: 'trigger', target: 'missing' }], name: 'Should not stick' }),
    });
    expect(broken.status).toBe(400);
    expect(broken.body.invalidFields[0]).toMatchObject({ code: 'unknown_edge_target' });
    expect((await api(`/api/workflows/${wf.id}`)).body.name).toBe('Renamed');

    const empty = await api(`/api/workflows/${wf.id}`, { method: 'PATCH', body: JSON.stringify({}) });
    expect(empty.status).toBe(400);
  });

  it('reports legacy functionName as a warning, not an error', async () => {
    const res = await post('/api/workflows/create', {
      name: 'Legacy',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        {
          id: 'w',
          type: 'web3/write-contract',
          data: {
            label: 'Write',
            config: {
              network: '8453',
              contractAddress: '0x000000000000000000000000000000000000dEaD',
              abi: JSON.stringify([{ type: 'function', name: 'ping', inputs: [], outputs: [], stateMutability: 'nonpayable' }]),
              functionName: 'ping',
            },
          },
        },
      ],
      edges: [{ source: 't', target: 'w' }],
    });
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'legacy_field', nodeId: 'w', suggestion: 'abiFunction' })]));
  });

  it('duplicates as a new private workflow', async () => {
    const wf = await createWorkflowViaApi(gw.url, key, { name: 'Original' });
    const copy = await post(`/api/workflows/${wf.id}/duplicate`, {});
    expect(copy.status).toBe(201);
    expect(copy.body.id).not.toBe(wf.id);
    expect(copy.body).toMatchObject({ name: 'Original (copy)', visibility: 'private', nodes: wf.nodes, edges: wf.edges });
  });

  it('a copy of a workflow whose name is at the limit stays within it, so its download imports again', async () => {
    const long = 'n'.repeat(195) + '😀😀';
    const wf = await createWorkflowViaApi(gw.url, key, { name: long });
    const copy = await post(`/api/workflows/${wf.id}/duplicate`, {});
    expect(copy.status).toBe(201);
    expect(copy.body.name.length).toBeLessThanOrEqual(200);
    expect(copy.body.name.endsWith(' (copy)')).toBe(true);
    expect(copy.body.name).not.toMatch(/[\uD800-\uDBFF] \(copy\)$/); // no half of a surrogate pair
    const copyOfCopy = await post(`/api/workflows/${copy.body.id}/duplicate`, {});
    expect(copyOfCopy.status).toBe(201);
    const download = await api(`/api/workflows/${copyOfCopy.body.id}/download`);
    expect((await post('/api/workflows/create', download.body)).status).toBe(200);
  });

  it('downloads portable JSON that create accepts back unchanged', async () => {
    const wf = await createWorkflowViaApi(gw.url, key, { name: 'Portable', description: 'round trip' });
    const download = await api(`/api/workflows/${wf.id}/download`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toContain('attachment');
    const recreated = await post('/api/workflows/create', download.body);
    expect(recreated.status).toBe(200);
    expect(recreated.body).toMatchObject({ name: 'Portable', description: 'round trip', nodes: wf.nodes, edges: wf.edges });
  });

  it('generates TypeScript that type-checks and targets this gateway', async () => {
    const wf = await createWorkflowViaApi(gw.url, key, { name: 'Code "quoted" */ name\nwith newline' });
    const res = await api(`/api/workflows/${wf.id}/code`);
    expect(res.status).toBe(200);
    expect(res.body.language).toBe('typescript');
    expect(res.body.code).toContain(`/api/workflows/\${WORKFLOW_ID}/execute`);
    expect(res.body.code).toContain(JSON.stringify(gw.url));
    const dir = tempDir('flowgate-code-');
    const file = path.join(dir, res.body.filename);
    fs.writeFileSync(file, res.body.code);
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ['node'],
      typeRoots: [path.resolve('node_modules/@types')],
      skipLibCheck: true,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    // The type check blocked this process (which also hosts the gateway) for seconds: let the overdue
    // keep-alive timers run now, or the next test's fetch reuses a socket the server is about to close (ECONNRESET).
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(diagnostics).toEqual([]);
  });

  it('deletes with 409 while execution history exists, and cascades runs and logs with force=true', async () => {
    const wf = await createWorkflowViaApi(gw.url, key);
    const store = gw.gateway.services.store;
    const executionId = await insertExecution(store, wf.id, await organizationId());
    const refused = await api(`/api/workflows/${wf.id}`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toContain('force=true');
    expect((await api(`/api/workflows/${wf.id}`)).status).toBe(200);

    const forced = await api(`/api/workflows/${wf.id}?force=true`, { method: 'DELETE' });
    expect(forced.status).toBe(200);
    expect(forced.body).toMatchObject({ success: true, deletedExecutions: 1 });
    expect((await api(`/api/workflows/${wf.id}`)).status).toBe(404);
    expect(await store.selectFrom('workflow_executions').select('id').where('id', '=', executionId).execute()).toEqual([]);
    expect(await store.selectFrom('workflow_execution_logs').select('id').where('execution_id', '=', executionId).execute()).toEqual([]);

    const plain = await createWorkflowViaApi(gw.url, key);
    expect((await api(`/api/workflows/${plain.id}`, { method: 'DELETE' })).status).toBe(200);
  });
});

describe('organization isolation', () => {
  it('answers every operation on another organization’s workflow with 404', async () => {
    const wf = await createWorkflowViaApi(gw.url, key);
    const asRival = (p: string, init: RequestInit = {}) => fetchJson(`${gw.url}${p}`, { key: otherKey, ...init });
    const attempts = [
      await asRival(`/api/workflows/${wf.id}`),
      await asRival(`/api/workflows/${wf.id}`, { method: 'PATCH', body: JSON.stringify({ name: 'stolen' }) }),
      await asRival(`/api/workflows/${wf.id}?force=true`, { method: 'DELETE' }),
      await asRival(`/api/workflows/${wf.id}/duplicate`, { method: 'POST', body: '{}' }),
      await asRival(`/api/workflows/${wf.id}/download`),
      await asRival(`/api/workflows/${wf.id}/code`),
      await asRival(`/api/workflows/${wf.id}/claim`, { method: 'POST', body: JSON.stringify({ claimToken: 'wfc_x' }) }),
      await asRival(`/api/workflows/${wf.id}/go-live`, { method: 'PUT', body: JSON.stringify({ name: 'mine' }) }),
    ];
    expect(attempts.map((a) => a.status)).toEqual(Array(attempts.length).fill(404));
    expect((await asRival('/api/workflows')).body.map((w: any) => w.id)).not.toContain(wf.id);
    expect((await api(`/api/workflows/${wf.id}`)).body.name).toBe('Balance check');
  });
});

describe('anonymous workflows and claiming', () => {
  it('lets only the original creator claim, once', async () => {
    const anonymous = await fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', body: JSON.stringify({ name: 'Anon', ...balanceGraph() }) });
    expect(anonymous.status).toBe(200);
    const { id, claimToken } = anonymous.body;
    expect(claimToken).toMatch(/^wfc_/);
    expect((await api(`/api/workflows/${id}`)).status).toBe(404);

    const wrong = await post(`/api/workflows/${id}/claim`, { claimToken: 'wfc_not-the-token' });
    expect(wrong.status).toBe(403);
    const claimed = await post(`/api/workflows/${id}/claim`, { claimToken });
    expect(claimed.status).toBe(200);
    expect(claimed.body.id).toBe(id);
    expect((await api(`/api/workflows/${id}`)).status).toBe(200);
    expect((await post(`/api/workflows/${id}/claim`, { claimToken }, otherKey)).status).toBe(404);
    expect((await post(`/api/workflows/${id}/claim`, { claimToken })).status).toBe(409);
  });
});

describe('publishing', () => {
  it('goes live with public tags, appears in the public list and is readable (not writable) by others', async () => {
    const wf = await createWorkflowViaApi(gw.url, key);
    const tag = await post('/api/public-tags', { name: `DeFi ${Date.now()}` });
    expect(tag.status).toBe(201);
    const tooMany = await api(`/api/workflows/${wf.id}/go-live`, {
      method: 'PUT',
      body: JSON.stringify({ name: 'Public', publicTagIds: ['a', 'b', 'c', 'd', 'e', 'f'] }),
    });
    expect(tooMany.status).toBe(400);
    const unknown = await api(`/api/workflows/${wf.id}/go-live`, { method: 'PUT', body: JSON.stringify({ name: 'Public', publicTagIds: ['missing'] }) });
    expect(unknown.status).toBe(400);
    expect(unknown.body.unknownPublicTagIds).toEqual(['missing']);
    const noName = await api(`/api/workflows/${wf.id}/go-live`, { method: 'PUT', body: JSON.stringify({}) });
    expect(noName.status).toBe(400);

    // Filed under the owner's own project and tag: ids the public does not see.
    const project = await post('/api/projects', { name: `Filing ${Date.now()}` });
    const ownTag = await post('/api/tags', { name: `own ${Date.now()}`, color: '#112233' });
    const filed = await api(`/api/workflows/${wf.id}`, { method: 'PATCH', body: JSON.stringify({ projectId: project.body.id, tagId: ownTag.body.id }) });
    expect(filed.body).toMatchObject({ projectId: project.body.id, tagId: ownTag.body.id });

    const live = await api(`/api/workflows/${wf.id}/go-live`, { method: 'PUT', body: JSON.stringify({ name: 'Public balance', publicTagIds: [tag.body.id] }) });
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ visibility: 'public', name: 'Public balance', publicTags: [{ id: tag.body.id, slug: tag.body.slug }] });

    const listing = await fetchJson(`${gw.url}/api/workflows/public?tag=${tag.body.slug}`);
    expect(listing.status).toBe(200);
    expect(listing.body.map((w: any) => w.id)).toEqual([wf.id]);
    expect(listing.body[0]).toMatchObject({ projectId: null, tagId: null });

    const asRival = await fetchJson(`${gw.url}/api/workflows/${wf.id}`, { key: otherKey });
    expect(asRival.status).toBe(200);
    expect(asRival.body.isOwner).toBe(false);
    expect(asRival.body).toMatchObject({ projectId: null, tagId: null });
    expect((await api(`/api/workflows/${wf.id}`)).body).toMatchObject({ isOwner: true, projectId: project.body.id, tagId: ownTag.body.id });
    expect((await fetchJson(`${gw.url}/api/workflows/${wf.id}`, { key: otherKey, method: 'PATCH', body: JSON.stringify({ name: 'x' }) })).status).toBe(404);

    const client = await connectMcp(gw.url);
    const found = await callTool(client, 'search_workflows', { query: 'public balance', chain: 'base', workflowType: 'read' });
    await client.close();
    expect(found.isError).toBe(false);
    expect(found.body.results.map((r: any) => r.id)).toContain(wf.id);
    expect(found.body.results.find((r: any) => r.id === wf.id).chainIds).toEqual([8453]);
  });

  it('features a public workflow only with internal service authentication', async () => {
    const wf = await createWorkflowViaApi(gw.url, key);
    await api(`/api/workflows/${wf.id}/go-live`, { method: 'PUT', body: JSON.stringify({ name: 'Featured one' }) });
    const body = JSON.stringify({ workflowId: wf.id, category: 'yield', protocol: 'aave', featuredOrder: 1 });
    expect((await fetchJson(`${gw.url}/api/hub/featured`, { method: 'POST', body })).status).toBe(401);
    expect((await fetchJson(`${gw.url}/api/hub/featured`, { method: 'POST', key, body })).status).toBe(401);
    expect((await fetchJson(`${gw.url}/api/hub/featured`, { method: 'POST', body, headers: { 'X-Internal-Service-Token': 'wrong' } })).status).toBe(401);
    const ok = await fetchJson(`${gw.url}/api/hub/featured`, { method: 'POST', body, headers: { 'X-Internal-Service-Token': INTERNAL_SECRET } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ id: wf.id, featured: true, featuredProtocol: 'aave' });
    const featured = await fetchJson(`${gw.url}/api/workflows/public?featured=true&featuredProtocol=AAVE`);
    expect(featured.body.map((w: any) => w.id)).toEqual([wf.id]);
  });
});

describe('workflow tools over MCP', () => {
  it('create, get, update, list, duplicate and delete through the SDK client', async () => {
    const client = await connectMcp(gw.url, key);
    const created = await callTool(client, 'create_workflow', { name: 'Via MCP', ...balanceGraph() });
    expect(created.isError).toBe(false);
    const id = created.body.id;
    expect((await callTool(client, 'get_workflow', { workflowId: id })).body).toMatchObject({ id, isOwner: true });
    expect((await callTool(client, 'update_workflow', { workflowId: id, name: 'Renamed via MCP' })).body.name).toBe('Renamed via MCP');
    const listed = await callTool(client, 'list_workflows', { limit: 200 });
    expect(listed.body.workflows.map((w: any) => w.id)).toContain(id);
    const copy = await callTool(client, 'duplicate_workflow', { workflowId: id });
    expect(copy.body.name).toBe('Renamed via MCP (copy)');
    expect((await callTool(client, 'delete_workflow', { workflowId: copy.body.id })).body).toMatchObject({ success: true });
    const invalid = await callTool(client, 'create_workflow', {
      name: 'Bad',
      nodes: [{ id: 'a', type: 'action', data: { config: { actionType: 'nope' } } }],
      edges: [],
    });
    expect(invalid.isError).toBe(true);
    expect(invalid.body.code).toBe('invalid_workflow');
    expect(invalid.body.invalidFields.length).toBeGreaterThan(1);
    await client.close();
  });
});
