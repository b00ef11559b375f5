import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { fetchJson, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { newSignedInUser, type SignedInUser } from './helpers/members.ts';

/**
 * Every stored object a tenant can create is bounded per organization
 * (QUOTA_VARIABLES; 2 of each here, workflows in test/workflow-quota.test.ts).
 * Without a bound one key could fill the shared database, or (public tags)
 * the list every client reads. One more is 409 quota_exceeded naming the
 * resource, its variable and how to make room, with nothing written; another
 * organization is not held back; removing one makes room again.
 */

const LIMIT = 2;
let gw: TestGateway;
let keyB: string;

beforeAll(async () => {
  gw = await startTestGateway({
    env: {
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_MAX_PROJECTS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_TAGS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_INTEGRATIONS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_WEBHOOK_KEYS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_PUBLIC_TAGS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_PENDING_INVITATIONS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_API_KEYS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_MEMBERS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_PUBLIC_WORKFLOWS_PER_ORG: String(LIMIT),
      FLOWGATE_MAX_LISTINGS_PER_ORG: String(LIMIT),
    },
  });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

type Answer = { status: number; body: any };

/** Fills the organization up to the bound, checks the refusal, that nothing was written and that the other organization is not affected. */
async function expectBound(
  resource: string,
  variable: string,
  o: { create: (i: number) => Promise<Answer>; count: () => Promise<number>; other: () => Promise<Answer>; created?: number },
) {
  const created = o.created ?? 201;
  for (let i = await o.count(); i < LIMIT; i++) {
    const made = await o.create(i);
    expect(made.status, JSON.stringify(made.body)).toBe(created);
  }
  const before = await o.count();
  const refused = await o.create(99);
  expect(refused.status, JSON.stringify(refused.body)).toBe(409);
  expect(refused.body).toMatchObject({ code: 'quota_exceeded', resource, limit: LIMIT });
  expect(refused.body.error).toContain(`(${variable})`);
  expect(refused.body.error).toMatch(/to add another, (delete|revoke|use|unlist|make)/);
  expect(await o.count()).toBe(before);
  const other = await o.other();
  expect(other.status, JSON.stringify(other.body)).toBe(created);
}

const api = (path: string, init: { method?: string; key?: string; json?: unknown } = {}) =>
  fetchJson(`${gw.url}${path}`, {
    method: init.method ?? 'GET',
    key: init.key ?? gw.ownerKey,
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
/** A list's length; the integration list is wrapped as `{data}`. */
const listOf = async (path: string): Promise<{ id: string }[]> => {
  const { body } = await api(path);
  return Array.isArray(body) ? body : body.data;
};
const countOf = async (path: string) => (await listOf(path)).length;

describe('stored objects per organization', () => {
  it('/openapi.json declares the 409 quota_exceeded on exactly the operations that add a bounded object, naming the bound', async () => {
    const { body } = await fetchJson(`${gw.url}/openapi.json`);
    const declared: Record<string, string> = {};
    for (const methods of Object.values(body.paths as Record<string, Record<string, any>>))
      for (const op of Object.values(methods))
        if (op.responses?.['409']?.description?.includes('quota_exceeded')) declared[op.operationId] = op.responses['409'].description;
    expect(Object.keys(declared).sort()).toEqual([
      'accept_invitation',
      'claim_workflow',
      'create_api_key',
      'create_integration',
      'create_invitation',
      'create_project',
      'create_public_tag',
      'create_tag',
      'create_webhook_key',
      'create_workflow',
      'duplicate_workflow',
      'go_live_workflow',
      'publish_workflow',
      'update_workflow',
    ]);
    expect(declared.create_project).toContain('FLOWGATE_MAX_PROJECTS_PER_ORG');
    expect(declared.create_invitation).toContain('FLOWGATE_MAX_PENDING_INVITATIONS_PER_ORG');
    expect(declared.create_invitation).toContain('FLOWGATE_MAX_MEMBERS_PER_ORG');
    expect(declared.go_live_workflow).toContain('FLOWGATE_MAX_PUBLIC_WORKFLOWS_PER_ORG');
    expect(declared.publish_workflow).toContain('FLOWGATE_MAX_LISTINGS_PER_ORG');
  });

  it('projects: the next one is refused over REST and MCP; deleting one makes room', async () => {
    await expectBound('projects', 'FLOWGATE_MAX_PROJECTS_PER_ORG', {
      create: (i) => api('/api/projects', { method: 'POST', json: { name: `p${i}` } }),
      count: () => countOf('/api/projects'),
      other: () => api('/api/projects', { method: 'POST', key: keyB, json: { name: 'b' } }),
    });
    const mcp = await connectMcp(gw.url, gw.ownerKey);
    try {
      const result = await callTool(mcp, 'create_project', { name: 'over mcp' });
      expect(result.isError).toBe(true);
      expect(result.body).toMatchObject({ code: 'quota_exceeded', resource: 'projects', limit: LIMIT });
    } finally {
      await mcp.close();
    }
    const [first] = (await api('/api/projects')).body as { id: string }[];
    expect((await api(`/api/projects/${first!.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await api('/api/projects', { method: 'POST', json: { name: 'after delete' } })).status).toBe(201);
  });

  it('tags: the next one is refused; deleting one makes room', async () => {
    await expectBound('tags', 'FLOWGATE_MAX_TAGS_PER_ORG', {
      create: (i) => api('/api/tags', { method: 'POST', json: { name: `t${i}`, color: '#123456' } }),
      count: () => countOf('/api/tags'),
      other: () => api('/api/tags', { method: 'POST', key: keyB, json: { name: 'b', color: '#123456' } }),
    });
    const [first] = (await api('/api/tags')).body as { id: string }[];
    expect((await api(`/api/tags/${first!.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await api('/api/tags', { method: 'POST', json: { name: 'after delete', color: '#123456' } })).status).toBe(201);
  });

  it('integrations: the next one is refused and its credentials are not stored; deleting one makes room', async () => {
    const discord = (name: string) => ({ name, type: 'discord', config: { webhookUrl: `https://discord.com/api/webhooks/1/${name}-secret` } });
    await expectBound('integrations', 'FLOWGATE_MAX_INTEGRATIONS_PER_ORG', {
      create: (i) => api('/api/integrations', { method: 'POST', json: discord(`i${i}`) }),
      count: () => countOf('/api/integrations'),
      other: () => api('/api/integrations', { method: 'POST', key: keyB, json: discord('b') }),
    });
    const stored = await gw.gateway.services.store.selectFrom('integrations').select('name').execute();
    expect(stored.map((r) => r.name)).not.toContain('i99');
    const [first] = await listOf('/api/integrations');
    expect((await api(`/api/integrations/${first!.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await api('/api/integrations', { method: 'POST', json: discord('after-delete') })).status).toBe(201);
  });

  it('webhook keys: the next one is refused and no key is shown; revoking one makes room', async () => {
    await expectBound('webhookKeys', 'FLOWGATE_MAX_WEBHOOK_KEYS_PER_ORG', {
      create: (i) => api('/api/api-keys', { method: 'POST', json: { name: `k${i}` } }),
      count: () => countOf('/api/api-keys'),
      other: () => api('/api/api-keys', { method: 'POST', key: keyB, json: { name: 'b' } }),
    });
    const refused = await api('/api/api-keys', { method: 'POST', json: { name: 'again' } });
    expect(JSON.stringify(refused.body)).not.toMatch(/wfb_/);
    const [first] = (await api('/api/api-keys')).body as { id: string }[];
    expect((await api(`/api/api-keys/${first!.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await api('/api/api-keys', { method: 'POST', json: { name: 'after revoke' } })).status).toBe(201);
  });

  it('public tags: an organization creates at most its bound of the shared vocabulary; others still can', async () => {
    const all = async () => ((await api('/api/public-tags')).body as { name: string }[]).map((t) => t.name);
    await expectBound('publicTags', 'FLOWGATE_MAX_PUBLIC_TAGS_PER_ORG', {
      create: (i) => api('/api/public-tags', { method: 'POST', json: { name: `Squatted ${i}` } }),
      count: async () => (await all()).filter((n) => n.startsWith('Squatted')).length,
      other: () => api('/api/public-tags', { method: 'POST', key: keyB, json: { name: 'Other tenant tag' } }),
    });
    expect(await all()).not.toContain('Squatted 99');
    // A taken slug still answers 409 conflict with the existing tag, which the full organization can use.
    const taken = await api('/api/public-tags', { method: 'POST', json: { name: 'Other tenant tag' } });
    expect(taken.status).toBe(409);
    expect(taken.body.existing.name).toBe('Other tenant tag');
  });

  describe('what every client reads', () => {
    // A workflow whose one step runs here, so it may be listed.
    const greeter = {
      nodes: [
        { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', config: { triggerType: 'Manual' } } },
        { id: 'greet', type: 'action', data: { label: 'Greet', config: { actionType: 'code/run-code', code: "return { greeting: 'hi' };" } } },
      ],
      edges: [{ id: 'e0', source: 'trigger', target: 'greet' }],
    };
    const newWorkflow = async (name: string, key = gw.ownerKey) => {
      const made = await api('/api/workflows/create', { method: 'POST', key, json: { name, ...greeter } });
      expect(made.status, JSON.stringify(made.body)).toBeLessThan(300);
      return made.body.id as string;
    };
    const visibility = async (id: string) => (await api(`/api/workflows/${id}`)).body.visibility;

    it('public workflows: going live past the bound is refused and the workflow stays private, by go-live, PATCH and MCP; renaming a public one is not; making one private makes room', async () => {
      const ids = await Promise.all([0, 1, 2].map((i) => newWorkflow(`public ${i}`)));
      const publicCount = async () => ((await api('/api/workflows/public')).body as { id: string }[]).filter((w) => ids.includes(w.id)).length;
      await expectBound('publicWorkflows', 'FLOWGATE_MAX_PUBLIC_WORKFLOWS_PER_ORG', {
        created: 200,
        create: (i) =>
          i === 0
            ? api(`/api/workflows/${ids[0]}/go-live`, { method: 'PUT', json: { name: 'Live one' } })
            : i === 1
              ? api(`/api/workflows/${ids[1]}`, { method: 'PATCH', json: { visibility: 'public' } })
              : api(`/api/workflows/${ids[2]}/go-live`, { method: 'PUT', json: { name: 'One too many' } }),
        count: publicCount,
        other: async () => api(`/api/workflows/${await newWorkflow('b', keyB)}/go-live`, { method: 'PUT', key: keyB, json: { name: 'Other tenant' } }),
      });
      expect(await visibility(ids[2]!)).toBe('private');
      const patched = await api(`/api/workflows/${ids[2]}`, { method: 'PATCH', json: { visibility: 'public' } });
      expect(patched.status).toBe(409);
      expect(patched.body).toMatchObject({ code: 'quota_exceeded', resource: 'publicWorkflows' });
      expect(patched.body.error).toContain('visibility "private"');
      const mcp = await connectMcp(gw.url, gw.ownerKey);
      try {
        const result = await callTool(mcp, 'go_live_workflow', { workflowId: ids[2], name: 'over mcp' });
        expect(result.isError).toBe(true);
        expect(result.body).toMatchObject({ code: 'quota_exceeded', resource: 'publicWorkflows', limit: LIMIT });
      } finally {
        await mcp.close();
      }
      expect(await visibility(ids[2]!)).toBe('private');
      // Already public: a rename through go-live, or PATCH with the same visibility, is no new public workflow.
      expect((await api(`/api/workflows/${ids[0]}/go-live`, { method: 'PUT', json: { name: 'Live one, renamed' } })).status).toBe(200);
      expect((await api(`/api/workflows/${ids[1]}`, { method: 'PATCH', json: { visibility: 'public', name: 'still public' } })).status).toBe(200);
      expect((await api(`/api/workflows/${ids[1]}`, { method: 'PATCH', json: { visibility: 'private' } })).status).toBe(200);
      expect((await api(`/api/workflows/${ids[2]}/go-live`, { method: 'PUT', json: { name: 'Room now' } })).status).toBe(200);
      expect(await publicCount()).toBe(LIMIT);
    });

    it('listings: listing one more is refused and its slug is not callable; updating a listed one is not refused; unlisting makes room', async () => {
      const ids = await Promise.all([0, 1, 2].map((i) => newWorkflow(`listed ${i}`)));
      const listing = (slug: string, description = 'Says hi.') => ({ slug, description, price: null, inputSchema: { type: 'object' } });
      const listed = async () => ((await api('/api/mcp/workflows')).body.workflows as { slug: string }[]).filter((l) => l.slug.startsWith('quota-'));
      await expectBound('listings', 'FLOWGATE_MAX_LISTINGS_PER_ORG', {
        created: 200,
        create: (i) => api(`/api/workflows/${ids[Math.min(i, 2)]}/listing`, { method: 'POST', json: listing(`quota-${i}`) }),
        count: async () => (await listed()).length,
        other: async () => api(`/api/workflows/${await newWorkflow('b', keyB)}/listing`, { method: 'POST', key: keyB, json: listing('other-tenant-greeter') }),
      });
      expect((await api('/api/mcp/workflows/quota-99')).status).toBe(404);
      const openapi = (await fetchJson(`${gw.url}/openapi.json`)).body;
      expect(Object.keys(openapi.paths).filter((p) => p.startsWith('/api/mcp/workflows/quota-'))).toHaveLength(LIMIT);
      // A listed workflow may change its description, price or slug while full.
      const updated = await api(`/api/workflows/${ids[0]}/listing`, { method: 'POST', json: listing('quota-0-renamed', 'Says hi, updated.') });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      expect((await listed()).map((l) => l.slug).sort()).toEqual(['quota-0-renamed', 'quota-1']);
      expect((await api(`/api/workflows/${ids[1]}/listing`, { method: 'DELETE' })).status).toBe(200);
      expect((await api(`/api/workflows/${ids[2]}/listing`, { method: 'POST', json: listing('quota-2') })).status).toBe(200);
      expect((await listed()).map((l) => l.slug).sort()).toEqual(['quota-0-renamed', 'quota-2']);
    });

    it('a listing documents at most 50 result fields, each named in at most 100 characters', async () => {
      const id = await newWorkflow('fields');
      const fields = (n: number, length = 5) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${'f'.repeat(length)}${i}`, 'string']));
      const over = await api(`/api/workflows/${id}/listing`, {
        method: 'POST',
        json: { slug: 'too-many-fields', description: 'x', price: null, inputSchema: { type: 'object' }, outputFields: fields(51) },
      });
      expect(over.status).toBe(400);
      expect(JSON.stringify(over.body)).toContain('at most 50 documented result fields');
      expect(JSON.stringify(over.body)).toContain('outputFields');
      const long = await api(`/api/workflows/${id}/listing`, {
        method: 'POST',
        json: { slug: 'long-field-name', description: 'x', price: null, inputSchema: { type: 'object' }, outputFields: fields(1, 101) },
      });
      expect(long.status).toBe(400);
      expect(JSON.stringify(long.body)).toContain('at most 100 characters');
      expect((await api('/api/mcp/workflows/too-many-fields')).status).toBe(404);
    });
  });

  describe('session-made objects', () => {
    let owner: SignedInUser;
    beforeAll(async () => {
      owner = await newSignedInUser(gw);
    });

    it('pending invitations: the next one is refused; a revoked or expired one no longer counts', async () => {
      const invite = (i: number) =>
        owner.client.fetch('/api/organization/invitations', { method: 'POST', json: { role: 'member', email: `i${i}@example.com` } });
      const pending = async () =>
        ((await owner.client.fetch('/api/organization/invitations')).body as { revokedAt: string | null; acceptedAt: string | null }[]).filter(
          (i) => !i.revokedAt && !i.acceptedAt,
        ).length;
      const other = await newSignedInUser(gw);
      await expectBound('pendingInvitations', 'FLOWGATE_MAX_PENDING_INVITATIONS_PER_ORG', {
        create: invite,
        count: pending,
        other: () => other.client.fetch('/api/organization/invitations', { method: 'POST', json: { role: 'member' } }),
      });
      const [first, second] = (await owner.client.fetch('/api/organization/invitations')).body as { id: string }[];
      expect((await owner.client.fetch(`/api/organization/invitations/${first!.id}`, { method: 'DELETE' })).status).toBe(200);
      expect((await invite(100)).status).toBe(201);
      expect((await invite(101)).status).toBe(409);
      // Seven days later the invitation has expired: the clock is the store's expiry date.
      await gw.gateway.services.store
        .updateTable('invitations')
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', second!.id)
        .execute();
      expect((await invite(102)).status).toBe(201);
    });

    it('members: accepting into a full organization is refused and the invitation stays usable; a full organization invites nobody; removing a member makes room', async () => {
      const team = await newSignedInUser(gw);
      const [b, c] = [await newSignedInUser(gw), await newSignedInUser(gw)];
      const invite = () => team.client.fetch('/api/organization/invitations', { method: 'POST', json: { role: 'member' } });
      const accept = (user: SignedInUser, token: string) => user.client.fetch('/api/invitations/accept', { method: 'POST', json: { token } });
      const members = async () => ((await team.client.fetch('/api/organization/members')).body as unknown[]).length;
      // Two invitations while the owner is the only member; the first accepted fills the organization (LIMIT = 2).
      const [forB, forC] = [(await invite()).body.token as string, (await invite()).body.token as string];
      expect((await accept(b, forB)).status).toBe(200);
      expect(await members()).toBe(LIMIT);

      const refused = await accept(c, forC);
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body).toMatchObject({ code: 'quota_exceeded', resource: 'members', limit: LIMIT });
      expect(refused.body.error).toContain('(FLOWGATE_MAX_MEMBERS_PER_ORG)');
      expect(refused.body.error).toMatch(/to add another, an admin removes one/);
      expect(await members()).toBe(LIMIT);
      const pendingForC = ((await team.client.fetch('/api/organization/invitations')).body as { acceptedAt: string | null }[]).filter((i) => !i.acceptedAt);
      expect(pendingForC).toHaveLength(1);
      // Inviting a third person into a full organization is refused at once.
      expect((await invite()).body).toMatchObject({ code: 'quota_exceeded', resource: 'members' });
      // Another organization is not held back.
      expect((await c.client.fetch('/api/organization/invitations', { method: 'POST', json: { role: 'member' } })).status).toBe(201);

      expect((await team.client.fetch(`/api/organization/members/${b.userId}`, { method: 'DELETE' })).status).toBe(200);
      const joined = await accept(c, forC);
      expect(joined.status, JSON.stringify(joined.body)).toBe(200);
      expect(joined.body.organization.id).toBe(team.ownOrganizationId);
    });

    it('API keys: a full organization is refused before the step-up challenge, so nobody signs for nothing; revoking one makes room', async () => {
      const withStepUp = async (path: string, method: 'POST' | 'DELETE', json: Record<string, unknown>) => {
        const first = await owner.client.fetch(path, { method, json });
        if (first.status !== 401 || first.body.code !== 'signature_required') return first;
        return owner.client.fetch(path, { method, json: { ...json, signature: await owner.account.signMessage({ message: first.body.challenge }) } });
      };
      const live = async () => ((await owner.client.fetch('/api/keys/list')).body as { revokedAt: string | null }[]).filter((k) => !k.revokedAt).length;
      const other = await newSignedInUser(gw);
      await expectBound('apiKeys', 'FLOWGATE_MAX_API_KEYS_PER_ORG', {
        create: (i) => withStepUp('/api/keys', 'POST', { name: `k${i}` }),
        count: live,
        other: async () => {
          const first = await other.client.fetch('/api/keys', { method: 'POST', json: { name: 'b' } });
          return other.client.fetch('/api/keys', {
            method: 'POST',
            json: { name: 'b', signature: await other.account.signMessage({ message: first.body.challenge }) },
          });
        },
      });
      const unsigned = await owner.client.fetch('/api/keys', { method: 'POST', json: { name: 'no challenge' } });
      expect(unsigned.status).toBe(409);
      expect(unsigned.body.challenge).toBeUndefined();
      const [first] = (await owner.client.fetch('/api/keys/list')).body as { id: string }[];
      expect((await withStepUp(`/api/keys/${first!.id}`, 'DELETE', {})).status).toBe(200);
      expect((await withStepUp('/api/keys', 'POST', { name: 'after revoke' })).status).toBe(201);
    });
  });

  it('/docs/limits lists every bound with the value this deployment enforces', async () => {
    const page = (await rawGet(`${gw.url}/docs/limits.md`)).body;
    for (const variable of [
      'FLOWGATE_MAX_WORKFLOWS_PER_ORG',
      'FLOWGATE_MAX_PROJECTS_PER_ORG',
      'FLOWGATE_MAX_PUBLIC_TAGS_PER_ORG',
      'FLOWGATE_MAX_API_KEYS_PER_ORG',
      'FLOWGATE_MAX_PUBLIC_WORKFLOWS_PER_ORG',
      'FLOWGATE_MAX_LISTINGS_PER_ORG',
    ]) {
      expect(page).toContain(`\`${variable}\``);
    }
    expect(page).toMatch(/\| Projects per organization \| 2 \| `FLOWGATE_MAX_PROJECTS_PER_ORG` \|/);
    expect(page).toMatch(/\| Workflows per organization[^|]*\| 10000 \|/);
  });
});
