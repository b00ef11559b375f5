import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { newSignedInUser, type SignedInUser } from './helpers/members.ts';
import { insertWorkflow } from './helpers/org-fixtures.ts';

/**
 * Every read of organization data authorizes by membership: a signed-in
 * owner of organization A, who knows every id of organization B, can read or
 * change none of B's workflows, keys, members, invitations, tags or audit
 * rows. Each refusal is the same 404 an unknown id gets, and B is unchanged.
 */

let gw: TestGateway;
let a: SignedInUser;
let b: SignedInUser;
let bData: { workflowId: string; webhookKeyId: string; webhookKey: string; invitationId: string; tagId: string; orgKeyId: string; orgKey: string };

beforeAll(async () => {
  gw = await startTestGateway();
  a = await newSignedInUser(gw);
  b = await newSignedInUser(gw);
  const workflowId = await insertWorkflow(gw, { organizationId: b.ownOrganizationId, userId: b.userId, name: 'B secret workflow' });
  const key = await b.client.fetch('/api/api-keys', { method: 'POST', json: { name: 'B hook' } });
  expect(key.status).toBe(201);
  const invitation = await b.client.fetch('/api/organization/invitations', { method: 'POST', json: { role: 'admin' } });
  expect(invitation.status).toBe(201);
  const tag = await b.client.fetch('/api/tags', { method: 'POST', json: { name: 'b-tag', color: '#112233' } });
  expect(tag.status).toBe(201);
  const orgKey = await gw.gateway.services.keys.create({ organizationId: b.ownOrganizationId, userId: b.userId, name: 'B key', scope: null });
  bData = {
    workflowId,
    webhookKeyId: key.body.id,
    webhookKey: key.body.key,
    invitationId: invitation.body.id,
    tagId: tag.body.id,
    orgKeyId: orgKey.record.id,
    orgKey: orgKey.key,
  };
});
afterAll(async () => gw.close());

describe("a session of organization A against organization B's ids", () => {
  it('answers 404 not_found for every read and change by id, the 404 an unknown id gets', async () => {
    const attempts: [string, string, unknown?][] = [
      ['GET', `/api/workflows/${bData.workflowId}`],
      ['PATCH', `/api/workflows/${bData.workflowId}`, { name: 'pwned' }],
      ['DELETE', `/api/workflows/${bData.workflowId}`],
      ['POST', `/api/workflows/${bData.workflowId}/execute`, {}],
      ['GET', `/api/workflows/${bData.workflowId}/executions`],
      ['DELETE', `/api/api-keys/${bData.webhookKeyId}`],
      ['DELETE', `/api/keys/${bData.orgKeyId}`],
      ['PATCH', `/api/tags/${bData.tagId}`, { name: 'pwned' }],
      ['DELETE', `/api/tags/${bData.tagId}`],
      ['PATCH', `/api/organization/members/${b.userId}`, { role: 'member' }],
      ['DELETE', `/api/organization/members/${b.userId}`],
      ['DELETE', `/api/organization/invitations/${bData.invitationId}`],
      ['POST', '/api/auth/organization/switch', { organizationId: b.ownOrganizationId }],
    ];
    for (const [method, path, json] of attempts) {
      const res = await a.client.fetch(path, { method, ...(json === undefined ? {} : { json }) });
      expect({ method, path, status: res.status, code: res.body?.code }).toEqual({ method, path, status: 404, code: 'not_found' });
    }
  });

  it("shows none of B's data in A's listings", async () => {
    const listings = [
      '/api/workflows',
      '/api/api-keys',
      '/api/keys/list',
      '/api/tags',
      '/api/organization/members',
      '/api/organization/invitations',
      '/api/audit-log?limit=200',
    ];
    const bIds = [bData.workflowId, bData.webhookKeyId, bData.orgKeyId, bData.tagId, bData.invitationId, b.userId, b.ownOrganizationId];
    for (const path of listings) {
      const res = await a.client.fetch(path);
      expect(res.status).toBe(200);
      const text = JSON.stringify(res.body);
      for (const id of bIds) expect({ path, leaked: text.includes(id) }).toEqual({ path, leaked: false });
    }
  });

  it("leaves B's data untouched", async () => {
    expect((await b.client.fetch(`/api/workflows/${bData.workflowId}`)).body.name).toBe('B secret workflow');
    expect((await b.client.fetch('/api/api-keys')).body.map((k: any) => k.id)).toContain(bData.webhookKeyId);
    expect((await b.client.fetch('/api/tags')).body.find((t: any) => t.id === bData.tagId).name).toBe('b-tag');
    const invitations = (await b.client.fetch('/api/organization/invitations')).body;
    expect(invitations.find((i: any) => i.id === bData.invitationId).status).toBe('pending');
    const members = (await b.client.fetch('/api/organization/members')).body;
    expect(members).toEqual([expect.objectContaining({ userId: b.userId, role: 'owner' })]);
    expect((await a.client.fetch('/api/auth/session')).body.organization.id).toBe(a.ownOrganizationId);
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: bData.orgKey })).status).toBe(200);
    // B's webhook key still triggers B's workflows: A could not revoke it.
    const probe = await fetchJson(`${gw.url}/api/workflows/${bData.workflowId}/webhook`, { method: 'POST', key: bData.webhookKey, body: '{}' });
    expect(probe.status).not.toBe(401);
  });
});
