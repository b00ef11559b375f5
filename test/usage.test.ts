import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { createWorkflowViaApi } from './helpers/workflows.ts';

/**
 * GET /api/organization/usage (get_usage, REST only): what an organization holds and has
 * used against each limit of the deployment, read from the same rows the
 * limits count, so a tenant sees a limit coming. Another organization's
 * objects and runs never show in it.
 */

let gw: TestGateway;
let keyB: string;

beforeAll(async () => {
  gw = await startTestGateway({
    env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_MAX_PROJECTS_PER_ORG: '7', FLOWGATE_RUN_DATA_RETENTION_DAYS: '9', FLOWGATE_AUDIT_LOG_RETENTION_DAYS: 'off' },
  });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const api = (key: string, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });
/** The usage answer, its quotas keyed by resource. */
const usage = async (key: string) => {
  const res = await api(key, '/api/organization/usage');
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { ...res.body, quotas: Object.fromEntries(res.body.quotas.map(({ resource, ...rest }: { resource: string }) => [resource, rest])) };
};

describe('usage against limits', () => {
  it('counts what the organization creates and its runs write, with the deployment’s limits; another organization is not counted', async () => {
    const before = await usage(gw.ownerKey);
    expect(before.quotas.projects).toEqual({ label: 'Projects', used: expect.any(Number), limit: 7, variable: 'FLOWGATE_MAX_PROJECTS_PER_ORG' });
    expect(before.quotas.workflows.limit).toBe(10_000);
    expect(before.retention).toEqual({ runDataDays: 9, auditLogDays: null });
    expect(before.waitingRuns).toMatchObject({ used: 0, limit: 10_000 });
    expect(Date.parse(before.runData.resetsAt)).toBeGreaterThan(Date.now());
    expect(before.runData.resetsAt).toMatch(/T00:00:00\.000Z$/);

    for (const name of ['one', 'two']) expect((await api(gw.ownerKey, '/api/projects', { method: 'POST', body: JSON.stringify({ name }) })).status).toBe(201);
    expect((await api(gw.ownerKey, '/api/tags', { method: 'POST', body: JSON.stringify({ name: 'x', color: '#112233' }) })).status).toBe(201);
    const workflow = await createWorkflowViaApi(gw.url, gw.ownerKey, {
      name: 'counted',
      nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }],
      edges: [],
    });
    const started = await api(gw.ownerKey, `/api/workflows/${workflow.id}/execute`, {
      method: 'POST',
      body: JSON.stringify({ input: { note: 'n'.repeat(5_000) } }),
    });
    expect((await api(gw.ownerKey, `/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=20000`)).body.status).toBe('success');

    // Tenant B's objects count for B only.
    expect((await api(keyB, '/api/projects', { method: 'POST', body: JSON.stringify({ name: 'b' }) })).status).toBe(201);

    const after = await usage(gw.ownerKey);
    expect(after.quotas.projects.used).toBe(before.quotas.projects.used + 2);
    expect(after.quotas.tags.used).toBe(before.quotas.tags.used + 1);
    expect(after.quotas.workflows.used).toBe(before.quotas.workflows.used + 1);
    // The run's input is stored with the run and logged by its trigger: at least twice its 5,000 characters.
    expect(after.runData.used - before.runData.used).toBeGreaterThan(10_000);
    const b = await usage(keyB);
    expect(b.quotas.projects.used).toBe(1);
    expect(b.runData.used).toBe(0);
  }, 60_000);

  it('needs a key', async () => {
    const res = await fetchJson(`${gw.url}/api/organization/usage`);
    expect(res.status).toBe(401);
  });
});
