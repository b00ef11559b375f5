import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, nowIso } from '../src/ids.ts';
import { PROJECT_PALETTE } from '../src/org/colors.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { insertWorkflow, orgIdentity, workflowRow } from './helpers/org-fixtures.ts';

let gw: TestGateway;
let owner: string;
let reader: string;
let writer: string;
let other: string;
let me: { organizationId: string; userId: string };
let them: { organizationId: string; userId: string };

beforeAll(async () => {
  gw = await startTestGateway();
  owner = gw.ownerKey;
  reader = await gw.createKey({ scope: 'mcp:read' });
  writer = await gw.createKey({ scope: 'mcp:write' });
  other = await gw.createKey({ org: 'other' });
  me = await orgIdentity(gw);
  them = await orgIdentity(gw, 'other');
});
afterAll(() => gw.close());

const api = (path: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
  fetchJson(`${gw.url}${path}`, { key: owner, ...init, body: init.json === undefined ? init.body : JSON.stringify(init.json) });

const createProject = async (json: Record<string, unknown>, key = owner) => {
  const res = await api('/api/projects', { method: 'POST', json, key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
};

describe('POST /api/projects', () => {
  it('creates a project (201) with the documented fields', async () => {
    const res = await api('/api/projects', { method: 'POST', json: { name: ' Yield ', description: 'Vault strategies', color: '#FF8800' }, key: writer });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Yield',
      description: 'Vault strategies',
      color: '#ff8800',
      organizationId: me.organizationId,
      workflowCount: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it('assigns palette colors in turn, by how many projects the organization has', async () => {
    const key = await gw.createKey({ org: 'palette' });
    const colors: string[] = [];
    for (let i = 0; i < PROJECT_PALETTE.length + 2; i++) colors.push((await createProject({ name: `p${i}` }, key)).color);
    expect(colors).toEqual([...PROJECT_PALETTE, PROJECT_PALETTE[0], PROJECT_PALETTE[1]]);
    // An explicit color is kept and still counts towards the rotation.
    expect((await createProject({ name: 'explicit', color: '#000' }, key)).color).toBe('#000');
    expect((await createProject({ name: 'next' }, key)).color).toBe(PROJECT_PALETTE[(PROJECT_PALETTE.length + 3) % PROJECT_PALETTE.length]);
  });

  it('defaults description to null', async () => {
    expect((await createProject({ name: 'bare' })).description).toBeNull();
  });

  it('refuses bad input with 400 naming the field, never 500', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x'.repeat(101) }, 'name'],
      [{ name: 7 }, 'name'],
      [{ name: 'ok', color: 'teal' }, 'color'],
      [{ name: 'ok', color: '#abcd' }, 'color'],
      [{ name: 'ok', description: 'd'.repeat(2001) }, 'description'],
      [{ name: 'ok', description: { text: 'no' } }, 'description'],
    ];
    for (const [json, field] of cases) {
      const res = await api('/api/projects', { method: 'POST', json });
      expect(res.status, JSON.stringify(json).slice(0, 60)).toBe(400);
      expect(res.body.code).toBe('invalid_input');
      expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(field);
    }
    const teal = await api('/api/projects', { method: 'POST', json: { name: 'ok', color: 'teal' } });
    expect(teal.body.error).toContain('"teal"');
  });

  it('needs mcp:write (mcp:read gets 403 insufficient_scope)', async () => {
    const res = await api('/api/projects', { method: 'POST', json: { name: 'nope' }, key: reader });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('insufficient_scope');
  });
});

describe('GET /api/projects', () => {
  it('lists projects with workflowCount', async () => {
    const project = await createProject({ name: 'Counted' });
    await insertWorkflow(gw, { ...me, projectId: project.id });
    await insertWorkflow(gw, { ...me, projectId: project.id });
    await insertWorkflow(gw, { ...me, projectId: project.id, visibility: 'public' });
    await insertWorkflow(gw, { ...me });
    const res = await api('/api/projects', { key: reader });
    expect(res.status).toBe(200);
    expect(res.body.find((p: { id: string }) => p.id === project.id)).toMatchObject({ name: 'Counted', workflowCount: 3 });
  });
});

describe('PATCH /api/projects/:projectId', () => {
  it('changes only the provided fields; description null clears it', async () => {
    const project = await createProject({ name: 'Old', description: 'keep me', color: '#123' });
    const renamed = await api(`/api/projects/${project.id}`, { method: 'PATCH', json: { name: 'New' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'New', description: 'keep me', color: '#123', createdAt: project.createdAt });
    const described = await api(`/api/projects/${project.id}`, { method: 'PATCH', json: { description: 'changed' } });
    expect(described.body).toMatchObject({ name: 'New', description: 'changed', color: '#123' });
    const cleared = await api(`/api/projects/${project.id}`, { method: 'PATCH', json: { description: null, color: '#456789' } });
    expect(cleared.body).toMatchObject({ name: 'New', description: null, color: '#456789' });
  });

  it('refuses an empty patch and a bad color; unknown ids are 404', async () => {
    const project = await createProject({ name: 'Patch me' });
    const empty = await api(`/api/projects/${project.id}`, { method: 'PATCH', json: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toContain('at least one of name, description, color');
    const bad = await api(`/api/projects/${project.id}`, { method: 'PATCH', json: { color: '#12' } });
    expect(bad.status).toBe(400);
    expect(bad.body.issues[0].path).toBe('color');
    expect((await api('/api/projects/missing', { method: 'PATCH', json: { name: 'x' } })).status).toBe(404);
  });
});

describe('DELETE /api/projects/:projectId', () => {
  it('keeps the workflows, unassigned, and says how many', async () => {
    const project = await createProject({ name: 'Doomed' });
    const wf = [await insertWorkflow(gw, { ...me, projectId: project.id }), await insertWorkflow(gw, { ...me, projectId: project.id })];
    const res = await api(`/api/projects/${project.id}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, id: project.id, unassignedWorkflows: 2 });
    for (const id of wf) expect(await workflowRow(gw, id)).toMatchObject({ id, project_id: null });
    expect((await api('/api/projects')).body.some((p: { id: string }) => p.id === project.id)).toBe(false);
    expect((await api(`/api/projects/${project.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('the foreign key itself sets workflows.project_id to null (ON DELETE SET NULL)', async () => {
    const store = gw.gateway.services.store;
    const projectId = newId();
    const now = nowIso();
    await store
      .insertInto('projects')
      .values({ id: projectId, organization_id: me.organizationId, name: 'fk', description: null, color: '#000', created_at: now, updated_at: now })
      .execute();
    const wf = await insertWorkflow(gw, { ...me, projectId });
    await store.deleteFrom('projects').where('id', '=', projectId).execute();
    expect(await workflowRow(gw, wf)).toMatchObject({ project_id: null });
  });

  it('needs mcp:write', async () => {
    const project = await createProject({ name: 'Guarded' });
    expect((await api(`/api/projects/${project.id}`, { method: 'DELETE', key: reader })).status).toBe(403);
  });
});

describe('organizations', () => {
  it("another organization cannot see, patch or delete this organization's projects: 404", async () => {
    const project = await createProject({ name: 'Ours', description: 'private' });
    await insertWorkflow(gw, { ...me, projectId: project.id });
    const theirs = await api('/api/projects', { key: other });
    expect(theirs.status).toBe(200);
    expect(theirs.body.some((p: { id: string }) => p.id === project.id)).toBe(false);
    expect(theirs.body.every((p: { organizationId: string }) => p.organizationId === them.organizationId)).toBe(true);
    expect((await api(`/api/projects/${project.id}`, { method: 'PATCH', json: { name: 'taken over' }, key: other })).status).toBe(404);
    expect((await api(`/api/projects/${project.id}`, { method: 'DELETE', key: other })).status).toBe(404);
    expect((await api('/api/projects')).body.find((p: { id: string }) => p.id === project.id)).toMatchObject({ name: 'Ours', workflowCount: 1 });
  });

  it("does not count another organization's workflows", async () => {
    const project = await createProject({ name: 'Isolated count' });
    // A foreign row pointing at this project (possible only by writing the store directly) is not counted.
    await insertWorkflow(gw, { ...them, projectId: project.id });
    expect((await api('/api/projects')).body.find((p: { id: string }) => p.id === project.id).workflowCount).toBe(0);
  });
});

describe('MCP', () => {
  let client: Client;
  beforeAll(async () => {
    client = await connectMcp(gw.url, owner);
  });
  afterAll(() => client.close());

  it('create_project then list_projects', async () => {
    const created = await callTool(client, 'create_project', { name: 'Via MCP', description: 'made by an agent' });
    expect(created.isError).toBe(false);
    expect(created.structured).toMatchObject({ name: 'Via MCP', description: 'made by an agent', organizationId: me.organizationId });
    expect(created.structured.color).toMatch(/^#[0-9a-f]{6}$/);
    const listed = await callTool(client, 'list_projects');
    expect(listed.isError).toBe(false);
    expect(listed.structured.projects.find((p: { id: string }) => p.id === created.structured.id)).toMatchObject({ workflowCount: 0 });
  });

  it('create_project refuses a bad color as a tool error', async () => {
    const res = await callTool(client, 'create_project', { name: 'Bad', color: 'rgb(0,0,0)' });
    expect(res.isError).toBe(true);
    expect(res.body.issues[0].path).toBe('color');
  });

  it('advertises list_projects as read-only and delete_project as destructive', async () => {
    const tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
    expect(tools.get('list_projects')?.annotations?.readOnlyHint).toBe(true);
    expect(tools.get('create_project')?.inputSchema.required).toEqual(['name']);
    expect(tools.get('delete_project')?.annotations?.destructiveHint).toBe(true);
  });
});
