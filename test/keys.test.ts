import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn, type BrowserClient } from './helpers/session.ts';
import { addMember } from './helpers/members.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { createKeyService, KEY_RECHECK_MS } from '../src/auth/keys.ts';

/** Organization key lifecycle (issue #14 item 5): who may create, list and revoke; revocation takes effect over REST and MCP. */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

const newAccount = () => privateKeyToAccount(generatePrivateKey());

interface Actor {
  account: PrivateKeyAccount;
  client: BrowserClient;
  organizationId: string;
}

async function owner(): Promise<Actor> {
  const account = newAccount();
  const client = browserClient(gw.url);
  const me = await signIn(client, gw.url, account);
  return { account, client, organizationId: me.organization.id };
}

async function memberOf(organizationId: string, role: 'admin' | 'member'): Promise<Actor> {
  const account = newAccount();
  await addMember(gw, organizationId, account, role);
  const client = browserClient(gw.url);
  const me = await signIn(client, gw.url, account);
  expect(me.organization).toMatchObject({ id: organizationId, role });
  return { account, client, organizationId };
}

/** A gated call: first the challenge, then the signed retry. */
async function withStepUp(actor: Actor, path: string, method: 'POST' | 'DELETE', json: Record<string, unknown> = {}) {
  const first = await actor.client.fetch(path, { method, json });
  if (first.status !== 401 || first.body.code !== 'signature_required') return first;
  return actor.client.fetch(path, { method, json: { ...json, signature: await actor.account.signMessage({ message: first.body.challenge }) } });
}

const createKey = async (actor: Actor, body: Record<string, unknown> = {}) => {
  const res = await withStepUp(actor, '/api/keys', 'POST', { name: 'agent', ...body });
  expect(res.status).toBe(201);
  return res.body as { id: string; key: string; prefix: string };
};

const bearer = (key: string, path = '/api/keys') => fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });

describe('who may manage keys', () => {
  it('owner and admin create, list and revoke behind step-up; a member gets 403 not_admin_or_owner and no challenge', async () => {
    const boss = await owner();
    const admin = await memberOf(boss.organizationId, 'admin');
    const member = await memberOf(boss.organizationId, 'member');

    for (const actor of [boss, admin]) {
      const first = await actor.client.fetch('/api/keys', { method: 'POST', json: { name: 'x' } });
      expect(first.body.code).toBe('signature_required');
      const created = await createKey(actor);
      const listed = await actor.client.fetch('/api/keys/list');
      expect(listed.status).toBe(200);
      expect(listed.body.map((k: { id: string }) => k.id)).toContain(created.id);
      const deleteFirst = await actor.client.fetch(`/api/keys/${created.id}`, { method: 'DELETE' });
      expect(deleteFirst.body.code).toBe('signature_required');
      const revoked = await actor.client.fetch(`/api/keys/${created.id}`, {
        method: 'DELETE',
        json: { signature: await actor.account.signMessage({ message: deleteFirst.body.challenge }) },
      });
      expect(revoked.status).toBe(200);
      expect(revoked.body.revokedAt).toBeTruthy();
      expect((await bearer(created.key)).status).toBe(401);
    }

    const target = await createKey(boss);
    const create = await member.client.fetch('/api/keys', { method: 'POST', json: { name: 'mine' } });
    const revoke = await member.client.fetch(`/api/keys/${target.id}`, { method: 'DELETE' });
    const list = await member.client.fetch('/api/keys/list');
    for (const res of [create, revoke, list]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('not_admin_or_owner');
      expect(res.body).not.toHaveProperty('challenge');
    }
    // No challenge was minted for the member at all.
    const rows = await gw.gateway.services.store
      .selectFrom('step_up_challenges')
      .innerJoin('users', 'users.id', 'step_up_challenges.user_id')
      .select('step_up_challenges.id')
      .where('users.wallet_address', '=', member.account.address)
      .execute();
    expect(rows).toEqual([]);
    expect((await bearer(target.key)).status).toBe(200);
  });

  it('a demoted admin loses the right on the next request', async () => {
    const boss = await owner();
    const admin = await memberOf(boss.organizationId, 'admin');
    await gw.gateway.services.store
      .updateTable('memberships')
      .set({ role: 'member' })
      .where('organization_id', '=', boss.organizationId)
      .where('role', '=', 'admin')
      .execute();
    const res = await admin.client.fetch('/api/keys', { method: 'POST', json: { name: 'x' } });
    expect(res.body.code).toBe('not_admin_or_owner');
  });

  it("another organization's key id is 404 and stays live; listings show only the caller's organization", async () => {
    const a = await owner();
    const b = await owner();
    const aKey = await createKey(a);
    const res = await withStepUp(b, `/api/keys/${aKey.id}`, 'DELETE');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    expect((await bearer(aKey.key)).status).toBe(200);
    const listed = await b.client.fetch('/api/keys/list');
    expect(listed.body.map((k: { id: string }) => k.id)).not.toContain(aKey.id);
  });

  it('POST /api/keys is session only: a bearer key (even unrestricted, of an owner) cannot mint keys', async () => {
    const res = await fetch(`${gw.url}/api/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.ownerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'nope' }),
    });
    expect(res.status).toBe(401);
    expect((await res.json()).code).toBe('session_required');
  });

  it('listing: prefix, name, scope, dates, revoked keys with revokedAt; never the key or its hash', async () => {
    const boss = await owner();
    const live = await createKey(boss, { name: 'live', scope: 'mcp:read' });
    const gone = await createKey(boss, { name: 'gone' });
    await bearer(live.key); // sets lastUsedAt
    expect((await withStepUp(boss, `/api/keys/${gone.id}`, 'DELETE')).status).toBe(200);
    const { body } = await boss.client.fetch('/api/keys/list');
    const byId = Object.fromEntries(body.map((k: { id: string }) => [k.id, k]));
    expect(byId[live.id]).toMatchObject({ name: 'live', prefix: live.prefix, scope: 'mcp:read', revokedAt: null });
    expect(byId[live.id].lastUsedAt).toBeTruthy();
    expect(byId[gone.id].revokedAt).toBeTruthy();
    const text = JSON.stringify(body);
    expect(text).not.toContain(live.key);
    expect(text).not.toMatch(/hash/i);
  });
});

describe('revocation takes effect', () => {
  it(`in the revoking process at once; elsewhere within KEY_RECHECK_MS (${KEY_RECHECK_MS} ms), over REST and MCP`, async () => {
    const boss = await owner();
    // Revoked by this gateway: refused on the very next request, though the key was just honoured (and cached).
    const first = await createKey(boss, { scope: 'mcp:admin' });
    const mcp = await connectMcp(gw.url, first.key);
    expect((await callTool(mcp, 'get_wallet')).isError).toBe(false);
    expect((await bearer(first.key)).status).toBe(200);
    expect((await withStepUp(boss, `/api/keys/${first.id}`, 'DELETE')).status).toBe(200);
    expect((await bearer(first.key)).status).toBe(401);
    await expect(callTool(mcp, 'get_wallet')).rejects.toThrow();
    await expect(connectMcp(gw.url, first.key)).rejects.toThrow();

    // Revoked by another process on the same database (here: a second key service, as `flowgate keys revoke` is):
    // this gateway honours its cached principal for at most KEY_RECHECK_MS, then refuses.
    const second = await createKey(boss);
    expect((await bearer(second.key)).status).toBe(200);
    const elsewhere = await createKeyService(gw.gateway.services.store).revoke(boss.organizationId, second.id);
    expect(elsewhere?.revokedAt).toBeTruthy();
    const revokedAt = Date.now();
    await new Promise((r) => setTimeout(r, KEY_RECHECK_MS + 100));
    expect(Date.now() - revokedAt).toBeGreaterThan(KEY_RECHECK_MS);
    expect((await bearer(second.key)).status).toBe(401);
    await expect(connectMcp(gw.url, second.key)).rejects.toThrow();
  });
});

describe('MCP tools for organization admins', () => {
  it('list_api_keys and revoke_api_key: the challenge comes back as an error result; the retry with signature revokes', async () => {
    const boss = await owner();
    const adminKey = await createKey(boss, { scope: 'mcp:admin', name: 'admin agent' });
    const victim = await createKey(boss, { name: 'leaked' });
    const mcp = await connectMcp(gw.url, adminKey.key);

    const listed = await callTool(mcp, 'list_api_keys');
    expect(listed.isError).toBe(false);
    expect(listed.body.keys.map((k: { name: string }) => k.name)).toEqual(expect.arrayContaining(['admin agent', 'leaked']));

    const first = await callTool(mcp, 'revoke_api_key', { keyId: victim.id });
    expect(first.isError).toBe(true);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
    const done = await callTool(mcp, 'revoke_api_key', { keyId: victim.id, signature: await boss.account.signMessage({ message: first.body.challenge }) });
    expect(done.isError).toBe(false);
    expect(done.body.revokedAt).toBeTruthy();
    expect((await bearer(victim.key)).status).toBe(401);

    const audit = await gw.gateway.services.store
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'key_revoked')
      .where('target', '=', victim.id)
      .executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ actor_kind: 'api_key', actor_key_id: adminKey.id, organization_id: boss.organizationId });
  });

  it('a key with a smaller scope does not see them; a key of a member is refused; the local owner (no wallet) is told to sign in with a wallet', async () => {
    const boss = await owner();
    const readKey = await createKey(boss, { scope: 'mcp:read' });
    const reader = await connectMcp(gw.url, readKey.key);
    const names = (await reader.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('list_api_keys');
    expect(names).not.toContain('revoke_api_key');

    const member = await memberOf(boss.organizationId, 'member');
    const memberUser = await gw.gateway.services.store
      .selectFrom('users')
      .select('id')
      .where('wallet_address', '=', member.account.address)
      .executeTakeFirstOrThrow();
    const { key: memberKey } = await gw.gateway.services.keys.create({
      organizationId: boss.organizationId,
      userId: memberUser.id,
      name: 'member admin-scope',
      scope: 'mcp:admin',
    });
    const asMember = await connectMcp(gw.url, memberKey);
    const refused = await callTool(asMember, 'revoke_api_key', { keyId: readKey.id });
    expect(refused.body).toMatchObject({ code: 'not_admin_or_owner' });
    expect(refused.body).not.toHaveProperty('challenge');

    // The first-start owner key belongs to the local owner, who has no wallet to sign with.
    const local = await connectMcp(gw.url, gw.ownerKey);
    const localKey = (await callTool(local, 'list_api_keys')).body.keys[0];
    const noWallet = await callTool(local, 'revoke_api_key', { keyId: localKey.id });
    expect(noWallet.isError).toBe(true);
    expect(noWallet.body.code).toBe('step_up_wallet_required');
    expect(noWallet.body.error).toMatch(/sign in with a wallet/i);
    expect(noWallet.body).not.toHaveProperty('challenge');
  });
});
