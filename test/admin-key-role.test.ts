import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { registry } from '../tools/index.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { addMember } from './helpers/members.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/**
 * An `svc_` key keeps the scope it was made with (`mcp:admin` here), but an
 * admin operation also needs its user to be an admin or owner at the time of
 * the request: a demoted admin's key could still mint and revoke webhook keys,
 * whose handlers did not look. Checked for every admin operation of the
 * registry, over REST and MCP.
 */

let gw: TestGateway;
let organizationId: string;
let demotedKey: string;
let adminKey: string;

beforeAll(async () => {
  gw = await startTestGateway();
  const { services } = gw.gateway;
  ({
    organization: { id: organizationId },
  } = await services.organizations.ensure('default'));
  const make = async (role: 'admin' | 'member') => {
    const { userId } = await addMember(gw, organizationId, privateKeyToAccount(generatePrivateKey()), 'admin');
    const { key } = await services.keys.create({ organizationId, userId, name: `${role} key`, scope: 'mcp:admin' });
    // Made while an admin; then demoted (or not), as an owner would with PATCH /api/organization/members/{userId}.
    if (role === 'member') await services.store.updateTable('memberships').set({ role }).where('user_id', '=', userId).execute();
    return key;
  };
  demotedKey = await make('member');
  adminKey = await make('admin');
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const adminTools = registry.filter((tool) => tool.scope === 'mcp:admin');
const restPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, 'some-id');

describe("a demoted admin's mcp:admin key", () => {
  it('names the admin operations it is checked on', () => {
    expect(adminTools.map((t) => t.name)).toEqual(expect.arrayContaining(['create_webhook_key', 'delete_webhook_key', 'list_audit_log']));
  });

  it.each(adminTools.filter((t) => t.rest).map((t) => [t.name, t] as const))('is refused %s over REST with 403 not_admin_or_owner', async (_name, tool) => {
    const { method, path } = tool.rest!;
    const res = await fetchJson(`${gw.url}${restPath(path)}`, { method, key: demotedKey, ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }) });
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.body).toMatchObject({ code: 'not_admin_or_owner', role: 'member', required: 'admin' });
  });

  it('is refused the admin tools over MCP too, while an admin’s key of the same scope is not', async () => {
    const demoted = await connectMcp(gw.url, demotedKey);
    const admin = await connectMcp(gw.url, adminKey);
    try {
      const overMcp = adminTools.filter((t) => t.mcp);
      expect(overMcp.map((t) => t.name)).toEqual(expect.arrayContaining(['list_api_keys', 'revoke_api_key']));
      for (const tool of overMcp) {
        const refused = await callTool(demoted, tool.name, {});
        expect(refused.isError, tool.name).toBe(true);
        expect(JSON.stringify(refused.body), tool.name).toContain('not_admin_or_owner');
      }
      const listed = await callTool(admin, 'list_api_keys', {});
      expect(listed.isError, JSON.stringify(listed.body)).toBeFalsy();
    } finally {
      await demoted.close();
      await admin.close();
    }
  });

  it('cannot mint or revoke webhook keys any more, and nothing is written', async () => {
    const made = await fetchJson(`${gw.url}/api/api-keys`, { method: 'POST', key: adminKey, body: JSON.stringify({ name: 'kept' }) });
    expect(made.status).toBe(201);
    const refusedCreate = await fetchJson(`${gw.url}/api/api-keys`, { method: 'POST', key: demotedKey, body: JSON.stringify({ name: 'minted' }) });
    expect(refusedCreate.status).toBe(403);
    const refusedRevoke = await fetchJson(`${gw.url}/api/api-keys/${made.body.id}`, { method: 'DELETE', key: demotedKey });
    expect(refusedRevoke.status).toBe(403);
    const live = await fetchJson(`${gw.url}/api/api-keys`, { key: adminKey });
    expect(live.body.map((k: { name: string }) => k.name)).toEqual(['kept']);
  });
});
