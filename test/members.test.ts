import { KEY_RECHECK_MS } from '../src/auth/keys.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn } from './helpers/session.ts';
import { addMember, newSignedInUser, switchTo, type SignedInUser } from './helpers/members.ts';

/**
 * Roles, members, invitations and organization switching over real HTTP with
 * real wallet sign-in sessions (a cookie jar per user).
 */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

async function invite(by: SignedInUser, role: string, email?: string) {
  const res = await by.client.fetch('/api/organization/invitations', { method: 'POST', json: { role, ...(email ? { email } : {}) } });
  return res;
}

async function accept(user: SignedInUser, token: string) {
  return user.client.fetch('/api/invitations/accept', { method: 'POST', json: { token } });
}

/** An organization (the owner's own) with an admin and a member who joined through invitations. */
async function team() {
  const owner = await newSignedInUser(gw);
  const admin = await newSignedInUser(gw);
  const member = await newSignedInUser(gw);
  const orgId = owner.ownOrganizationId;
  for (const [user, role] of [
    [admin, 'admin'],
    [member, 'member'],
  ] as const) {
    const inv = await invite(owner, role);
    expect(inv.status).toBe(201);
    expect((await accept(user, inv.body.token)).status).toBe(200);
    await switchTo(user, orgId);
  }
  return { owner, admin, member, orgId };
}

describe('invitations', () => {
  it('a one-time token, shown once, redeemed by a signed-in user for a membership with the invited role', async () => {
    const owner = await newSignedInUser(gw);
    const invitee = await newSignedInUser(gw);
    const created = await invite(owner, 'admin');
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ role: 'admin', status: 'pending', invitedBy: owner.userId, email: null });
    expect(created.body.token).toMatch(/^inv_[A-Za-z0-9_-]{40,}$/);
    expect(Date.parse(created.body.expiresAt) - Date.now()).toBeGreaterThan(6.9 * 24 * 3600 * 1000);

    // The listing never shows the token again, and the store holds only its hash.
    const listed = await owner.client.fetch('/api/organization/invitations');
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.token);
    const stored = await gw.gateway.services.store.selectFrom('invitations').selectAll().where('id', '=', created.body.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(created.body.token);

    const accepted = await accept(invitee, created.body.token);
    expect(accepted.status).toBe(200);
    expect(accepted.body.organization).toMatchObject({ id: owner.ownOrganizationId, role: 'admin' });
    // The session stays where it was until the user switches.
    expect((await invitee.client.fetch('/api/auth/session')).body.organization.id).toBe(invitee.ownOrganizationId);
    const session = await invitee.client.fetch('/api/auth/session');
    expect(session.body.organizations.map((o: any) => o.id)).toContain(owner.ownOrganizationId);

    const members = await owner.client.fetch('/api/organization/members');
    expect(members.body).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ userId: owner.userId, role: 'owner', walletAddress: owner.account.address }),
        expect.objectContaining({ userId: invitee.userId, role: 'admin' }),
      ]),
    );
    const after = await owner.client.fetch('/api/organization/invitations');
    expect(after.body.find((i: any) => i.id === created.body.id)).toMatchObject({ status: 'accepted', acceptedBy: invitee.userId });
  });

  it('used, revoked, expired and unknown tokens each get 400 invitation_invalid saying which; nothing is joined', async () => {
    const owner = await newSignedInUser(gw);
    const a = await newSignedInUser(gw);
    const b = await newSignedInUser(gw);

    const used = (await invite(owner, 'member')).body;
    expect((await accept(a, used.token)).status).toBe(200);
    const reuse = await accept(b, used.token);
    expect(reuse.status).toBe(400);
    expect(reuse.body).toMatchObject({ code: 'invitation_invalid' });
    expect(reuse.body.error).toMatch(/already used/);

    const revoked = (await invite(owner, 'member')).body;
    const revoke = await owner.client.fetch(`/api/organization/invitations/${revoked.id}`, { method: 'DELETE' });
    expect(revoke.status).toBe(200);
    expect(revoke.body.status).toBe('revoked');
    const afterRevoke = await accept(b, revoked.token);
    expect(afterRevoke.status).toBe(400);
    expect(afterRevoke.body.error).toMatch(/revoked/);

    const expired = (await invite(owner, 'member')).body;
    await gw.gateway.services.store
      .updateTable('invitations')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', expired.id)
      .execute();
    const late = await accept(b, expired.token);
    expect(late.status).toBe(400);
    expect(late.body.error).toMatch(/expired/);

    const unknown = await accept(b, 'inv_' + 'x'.repeat(43));
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('invitation_invalid');

    const members = (await owner.client.fetch('/api/organization/members')).body.map((m: any) => m.userId);
    expect(members).not.toContain(b.userId);
  });

  it('one token accepted by two users at once admits exactly one', async () => {
    const owner = await newSignedInUser(gw);
    const [x, y] = [await newSignedInUser(gw), await newSignedInUser(gw)];
    const inv = (await invite(owner, 'member')).body;
    const results = await Promise.all([accept(x, inv.token), accept(y, inv.token)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
    const members = (await owner.client.fetch('/api/organization/members')).body.map((m: any) => m.userId);
    expect(members.filter((id: string) => id === x.userId || id === y.userId)).toHaveLength(1);
  });

  it('an invitation bound to an e-mail address is refused to a user without that verified address, and stays usable', async () => {
    const owner = await newSignedInUser(gw);
    const other = await newSignedInUser(gw);
    const inv = (await invite(owner, 'member', 'Alice@Example.com')).body;
    expect(inv.email).toBe('alice@example.com');
    const res = await accept(other, inv.token);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('invitation_wrong_recipient');
    const listed = (await owner.client.fetch('/api/organization/invitations')).body.find((i: any) => i.id === inv.id);
    expect(listed.status).toBe('pending');
  });

  it('accepting twice into the same organization is 409 already_member and leaves the second invitation unused', async () => {
    const { owner, member } = await team();
    const second = (await invite(owner, 'admin')).body;
    const res = await accept(member, second.token);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('already_member');
    const listed = (await owner.client.fetch('/api/organization/invitations')).body.find((i: any) => i.id === second.id);
    expect(listed.status).toBe('pending');
  });

  it("an admin's invitation dies when the admin is demoted before it is accepted", async () => {
    const { owner, admin } = await team();
    const inv = (await invite(admin, 'admin')).body;
    expect((await owner.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'PATCH', json: { role: 'member' } })).status).toBe(200);
    const outsider = await newSignedInUser(gw);
    const res = await accept(outsider, inv.token);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/inviter/);
  });
});

describe('who may do what', () => {
  it('members cannot invite, list invitations, change roles or remove others (403 not_admin_or_owner); they can list members', async () => {
    const { owner, admin, member } = await team();
    expect((await member.client.fetch('/api/organization/members')).status).toBe(200);
    for (const res of [
      await invite(member, 'member'),
      await member.client.fetch('/api/organization/invitations'),
      await member.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'PATCH', json: { role: 'member' } }),
      await member.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'DELETE' }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('not_admin_or_owner');
    }
    // Nothing changed.
    const roles = Object.fromEntries((await owner.client.fetch('/api/organization/members')).body.map((m: any) => [m.userId, m.role]));
    expect(roles[admin.userId]).toBe('admin');
  });

  it('a member session cannot use admin-scope operations (webhook keys): 403 not_admin_or_owner; an admin can', async () => {
    const { admin, member } = await team();
    const refused = await member.client.fetch('/api/api-keys', { method: 'POST', json: { name: 'hook' } });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'not_admin_or_owner', role: 'member' });
    expect((await admin.client.fetch('/api/api-keys', { method: 'POST', json: { name: 'hook' } })).status).toBe(201);
    // Ordinary work stays open to members.
    expect((await member.client.fetch('/api/workflows')).status).toBe(200);
  });

  it('admins manage members and admins but not owners; only owners grant or take owner', async () => {
    const { owner, admin, member } = await team();
    // Admin may promote a member to admin and back.
    const promoted = await admin.client.fetch(`/api/organization/members/${member.userId}`, { method: 'PATCH', json: { role: 'admin' } });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ userId: member.userId, role: 'admin' });
    expect((await admin.client.fetch(`/api/organization/members/${member.userId}`, { method: 'PATCH', json: { role: 'member' } })).status).toBe(200);

    for (const res of [
      await admin.client.fetch(`/api/organization/members/${member.userId}`, { method: 'PATCH', json: { role: 'owner' } }),
      await admin.client.fetch(`/api/organization/members/${owner.userId}`, { method: 'PATCH', json: { role: 'member' } }),
      await admin.client.fetch(`/api/organization/members/${owner.userId}`, { method: 'DELETE' }),
      await invite(admin, 'owner'),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'not_admin_or_owner', required: 'owner' });
    }
    expect((await invite(admin, 'admin')).status).toBe(201);

    const granted = await owner.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'PATCH', json: { role: 'owner' } });
    expect(granted.body.role).toBe('owner');
  });

  it('the last owner can be neither demoted nor removed (409 last_owner); with a second owner both work', async () => {
    const { owner, admin, orgId } = await team();
    const demote = await owner.client.fetch(`/api/organization/members/${owner.userId}`, { method: 'PATCH', json: { role: 'admin' } });
    expect(demote.status).toBe(409);
    expect(demote.body.code).toBe('last_owner');
    const leave = await owner.client.fetch(`/api/organization/members/${owner.userId}`, { method: 'DELETE' });
    expect(leave.status).toBe(409);
    expect(leave.body.code).toBe('last_owner');
    const ownerRole = () =>
      gw.gateway.services.store
        .selectFrom('memberships')
        .select('role')
        .where('organization_id', '=', orgId)
        .where('user_id', '=', owner.userId)
        .executeTakeFirst();
    expect((await ownerRole())?.role).toBe('owner');

    expect((await owner.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'PATCH', json: { role: 'owner' } })).status).toBe(200);
    // Concurrent demotions of the two owners: exactly one wins, an owner always remains.
    const [x, y] = await Promise.all([
      owner.client.fetch(`/api/organization/members/${owner.userId}`, { method: 'PATCH', json: { role: 'member' } }),
      admin.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'PATCH', json: { role: 'member' } }),
    ]);
    expect([x.status, y.status].sort()).toEqual([200, 409]);
    const owners = await gw.gateway.services.store
      .selectFrom('memberships')
      .select('user_id')
      .where('organization_id', '=', orgId)
      .where('role', '=', 'owner')
      .execute();
    expect(owners).toHaveLength(1);
  });

  it('an unknown user id, or a user of another organization, answers 404 not_found', async () => {
    const { owner } = await team();
    const stranger = await newSignedInUser(gw);
    for (const id of ['nope', stranger.userId]) {
      const res = await owner.client.fetch(`/api/organization/members/${id}`, { method: 'PATCH', json: { role: 'member' } });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });

  it('membership changes are session only: an organization key gets 401 session_required', async () => {
    const res = await fetchJson(`${gw.url}/api/organization/invitations`, { method: 'POST', key: gw.ownerKey, body: JSON.stringify({ role: 'member' }) });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('session_required');
    // Reading the member list is allowed to organization keys.
    const list = await fetchJson(`${gw.url}/api/organization/members`, { key: gw.ownerKey });
    expect(list.status).toBe(200);
    expect(list.body[0].role).toBe('owner');
  });
});

describe('bad input', () => {
  it('answers 400 invalid_input and changes nothing', async () => {
    const { owner, member, orgId } = await team();
    const before = await gw.gateway.services.store.selectFrom('memberships').selectAll().where('organization_id', '=', orgId).orderBy('user_id').execute();
    const invitations = await gw.gateway.services.store.selectFrom('invitations').select('id').where('organization_id', '=', orgId).execute();
    const cases: [string, string, unknown][] = [
      ['PATCH', `/api/organization/members/${member.userId}`, { role: 'superadmin' }],
      ['PATCH', `/api/organization/members/${member.userId}`, {}],
      ['POST', '/api/organization/invitations', { role: 'owner ', email: 'not-an-address' }],
      ['POST', '/api/organization/invitations', { role: 'member', email: 'x'.repeat(300) + '@example.com' }],
      ['POST', '/api/invitations/accept', { token: 'x'.repeat(5000) }],
      ['POST', '/api/invitations/accept', { token: 42 }],
      ['POST', '/api/auth/organization/switch', { organizationId: ['a'] }],
    ];
    for (const [method, path, json] of cases) {
      const res = await owner.client.fetch(path, { method, json });
      expect({ path, json, status: res.status, code: res.body.code }).toEqual({ path, json, status: 400, code: 'invalid_input' });
    }
    const after = await gw.gateway.services.store.selectFrom('memberships').selectAll().where('organization_id', '=', orgId).orderBy('user_id').execute();
    expect(after).toEqual(before);
    expect(await gw.gateway.services.store.selectFrom('invitations').select('id').where('organization_id', '=', orgId).execute()).toEqual(invitations);
  });

  it('a cookie request from a foreign origin cannot change a role (403 Invalid origin)', async () => {
    const { owner, member } = await team();
    const res = await owner.client.fetch(`/api/organization/members/${member.userId}`, {
      method: 'PATCH',
      json: { role: 'admin' },
      headers: { origin: 'https://evil.example' },
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('Invalid origin');
    const roles = Object.fromEntries((await owner.client.fetch('/api/organization/members')).body.map((m: any) => [m.userId, m.role]));
    expect(roles[member.userId]).toBe('member');
  });
});

describe('removing a member', () => {
  it('ends their sessions in the organization and revokes the API keys they created there', async () => {
    const { owner, member, orgId } = await team();
    const { services } = gw.gateway;
    const { key: orgKey, record: orgKeyRecord } = await services.keys.create({
      organizationId: orgId,
      userId: member.userId,
      name: 'member key',
      scope: 'mcp:read',
    });
    const { key: ownKey } = await services.keys.create({ organizationId: member.ownOrganizationId, userId: member.userId, name: 'own', scope: null });
    expect((await fetchJson(`${gw.url}/api/keys`, { key: orgKey })).status).toBe(200);
    expect((await member.client.fetch('/api/workflows')).status).toBe(200);

    const removed = await owner.client.fetch(`/api/organization/members/${member.userId}`, { method: 'DELETE' });
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ userId: member.userId, role: 'member', sessionsEnded: 1, keysRevoked: 1 });
    const revokedRows = (await owner.client.fetch('/api/audit-log?action=key_revoked')).body.rows;
    expect(revokedRows).toHaveLength(1);
    expect(revokedRows[0]).toMatchObject({ actor: { userId: owner.userId }, target: orgKeyRecord.id, details: { kind: 'svc', reason: 'member_removed' } });

    // The session was in that organization: it has ended.
    expect((await member.client.fetch('/api/workflows')).status).toBe(401);
    // The key stops at once in this process (elsewhere within the KEY_RECHECK_MS window of the key cache).
    const refused = await fetchJson(`${gw.url}/api/workflows`, { key: orgKey });
    expect(refused.status).toBe(401);
    // Their key in their own organization is untouched.
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: ownKey })).status).toBe(200);
    const members = (await owner.client.fetch('/api/organization/members')).body.map((m: any) => m.userId);
    expect(members).not.toContain(member.userId);

    // Invited again, the old session does not come back to life.
    const again = (await invite(owner, 'member')).body;
    const fresh = await newSignedInUser(gw);
    expect((await accept(fresh, again.token)).status).toBe(200);
    expect((await member.client.fetch('/api/workflows')).status).toBe(401);
  });

  it('any member may leave; a removed user cannot act through the old organization', async () => {
    const { member, owner, orgId } = await team();
    const left = await member.client.fetch(`/api/organization/members/${member.userId}`, { method: 'DELETE' });
    expect(left.status).toBe(200);
    const stillOwner = await owner.client.fetch('/api/organization/members');
    expect(stillOwner.body.map((m: any) => m.userId)).not.toContain(member.userId);
    // Signing in again lands in the user's own organization, and switching back to the old one is 404.
    const client = browserClient(gw.url);
    const signed = await signIn(client, gw.url, member.account);
    const fresh = { client, signed };
    expect(fresh.signed.organization.id).toBe(member.ownOrganizationId);
    const back = await fresh.client.fetch('/api/auth/organization/switch', { method: 'POST', json: { organizationId: orgId } });
    expect(back.status).toBe(404);
  });
});

describe('keys follow the membership', () => {
  it("a key stops authenticating when its creator's membership is gone, whatever path removed it", async () => {
    const { admin: member, orgId } = await team();
    const { services } = gw.gateway;
    const { key: orgKey } = await services.keys.create({ organizationId: orgId, userId: member.userId, name: 'member key', scope: 'mcp:read' });
    const hook = await member.client.fetch('/api/api-keys', { method: 'POST', json: { name: 'hook' } });
    expect(hook.status).toBe(201);
    const wf = await member.client.fetch('/api/workflows/create', {
      method: 'POST',
      json: { name: 'hooked', nodes: [{ id: 't', type: 'trigger', data: { label: 'T', config: { triggerType: 'Webhook' } } }], edges: [] },
    });
    expect(wf.status).toBe(200);
    const callHook = () => fetchJson(`${gw.url}/api/workflows/${wf.body.id}/webhook`, { method: 'POST', key: hook.body.key, body: '{}' });
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: orgKey })).status).toBe(200);
    expect((await callHook()).status).not.toBe(401);

    // Not through DELETE /api/organization/members: the rows stay unrevoked, the membership check alone refuses them.
    await services.store.deleteFrom('memberships').where('organization_id', '=', orgId).where('user_id', '=', member.userId).execute();
    await new Promise((resolve) => setTimeout(resolve, KEY_RECHECK_MS + 200));
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: orgKey })).status).toBe(401);
    expect((await callHook()).status).toBe(401);
  });
});

describe('organization switching', () => {
  it('switches to an organization the user belongs to; any other id answers 404 not_found like an unknown one', async () => {
    const a = await newSignedInUser(gw);
    const b = await newSignedInUser(gw);
    await addMember(gw, b.ownOrganizationId, a.account, 'member');

    const switched = await a.client.fetch('/api/auth/organization/switch', { method: 'POST', json: { organizationId: b.ownOrganizationId } });
    expect(switched.status).toBe(200);
    expect(switched.body.organization).toMatchObject({ id: b.ownOrganizationId, role: 'member' });
    const session = await a.client.fetch('/api/auth/session');
    expect(session.body.organization).toMatchObject({ id: b.ownOrganizationId, role: 'member' });
    // Organization data now comes from the new organization.
    const members = await a.client.fetch('/api/organization/members');
    expect(members.body.map((m: any) => m.userId).sort()).toEqual([a.userId, b.userId].sort());

    const c = await newSignedInUser(gw);
    const foreign = await a.client.fetch('/api/auth/organization/switch', { method: 'POST', json: { organizationId: c.ownOrganizationId } });
    const unknown = await a.client.fetch('/api/auth/organization/switch', { method: 'POST', json: { organizationId: 'no-such-org' } });
    for (const res of [foreign, unknown]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect(foreign.body.error.replace(c.ownOrganizationId, 'X')).toBe(unknown.body.error.replace('no-such-org', 'X'));
    expect((await a.client.fetch('/api/auth/session')).body.organization.id).toBe(b.ownOrganizationId);
  });
});
