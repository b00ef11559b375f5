import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { refuseAuditInserts } from './helpers/store-faults.ts';
import { newSignedInUser, switchTo, type SignedInUser } from './helpers/members.ts';
import { AUDIT_CSV_COLUMNS, auditRowsToCsv, queryAuditLog } from '../src/org/audit-log-query.ts';
import { recordAudit } from '../src/org/audit-log.ts';

/** The audit log over real HTTP: rows for membership changes, who may read it, paging, append-only, no secrets. */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

async function invite(by: SignedInUser, role: string) {
  const res = await by.client.fetch('/api/organization/invitations', { method: 'POST', json: { role } });
  expect(res.status).toBe(201);
  return res.body as { id: string; token: string };
}

/** An owner's organization where an admin and a member joined, one member was promoted and removed, and an invitation was revoked. */
async function history() {
  const owner = await newSignedInUser(gw);
  const admin = await newSignedInUser(gw);
  const member = await newSignedInUser(gw);
  const orgId = owner.ownOrganizationId;
  const secrets: string[] = [];
  for (const [user, role] of [
    [admin, 'admin'],
    [member, 'member'],
  ] as const) {
    const inv = await invite(owner, role);
    secrets.push(inv.token);
    expect((await user.client.fetch('/api/invitations/accept', { method: 'POST', json: { token: inv.token } })).status).toBe(200);
    await switchTo(user, orgId);
  }
  const revoked = await invite(owner, 'member');
  secrets.push(revoked.token);
  await owner.client.fetch(`/api/organization/invitations/${revoked.id}`, { method: 'DELETE' });
  await owner.client.fetch(`/api/organization/members/${member.userId}`, { method: 'PATCH', json: { role: 'admin' } });
  await owner.client.fetch(`/api/organization/members/${member.userId}`, { method: 'DELETE' });
  for (const user of [owner, admin, member]) {
    for (const cookie of await user.client.jar.getCookies(gw.url)) secrets.push(cookie.value);
  }
  return { owner, admin, member, orgId, secrets, revokedInvitationId: revoked.id };
}

async function readAll(user: SignedInUser, query = '') {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: any } = await user.client.fetch(`/api/audit-log?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    expect(res.body.rows.length).toBeLessThanOrEqual(2);
    rows.push(...res.body.rows);
    cursor = res.body.nextCursor;
  } while (cursor);
  return rows;
}

describe('audit log', () => {
  it('records role changes, invitations, removal and switches with actor, target, IP and time, newest first', async () => {
    const { owner, admin, member, orgId, revokedInvitationId } = await history();
    const res = await owner.client.fetch('/api/audit-log');
    expect(res.status).toBe(200);
    const rows = res.body.rows as any[];
    const actions = rows.map((r) => r.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        'sign_up',
        'invitation_created',
        'invitation_accepted',
        'organization_switched',
        'invitation_revoked',
        'role_changed',
        'member_removed',
      ]),
    );
    const times = rows.map((r) => r.createdAt);
    expect([...times].sort().reverse()).toEqual(times);

    expect(rows.find((r) => r.action === 'role_changed')).toMatchObject({
      actor: { kind: 'session', userId: owner.userId },
      target: member.userId,
      outcome: 'success',
      ip: expect.stringMatching(/127\.0\.0\.1/),
      details: { from: 'member', to: 'admin' },
    });
    expect(rows.find((r) => r.action === 'member_removed')).toMatchObject({ target: member.userId, details: { role: 'admin', self: false } });
    expect(rows.find((r) => r.action === 'invitation_revoked')).toMatchObject({ target: revokedInvitationId });
    expect(rows.filter((r) => r.action === 'invitation_accepted').map((r) => r.actor.userId)).toEqual(expect.arrayContaining([admin.userId, member.userId]));
    expect(rows.find((r) => r.action === 'organization_switched' && r.actor.userId === admin.userId)).toMatchObject({ target: orgId });
  });

  it('filters by action and time and pages with a cursor without repeating or skipping rows', async () => {
    const { owner } = await history();
    const full = (await owner.client.fetch('/api/audit-log?limit=200')).body.rows as any[];
    const paged = await readAll(owner);
    expect(paged.map((r) => r.id)).toEqual(full.map((r) => r.id));
    expect(new Set(paged.map((r) => r.id)).size).toBe(paged.length);

    const created = await readAll(owner, '&action=invitation_created');
    expect(created).toHaveLength(3);
    expect(created.every((r) => r.action === 'invitation_created')).toBe(true);

    const middle = full[Math.floor(full.length / 2)].createdAt;
    const since = (await owner.client.fetch(`/api/audit-log?limit=200&since=${encodeURIComponent(middle)}`)).body.rows as any[];
    expect(since.length).toBeGreaterThan(0);
    expect(since.length).toBeLessThan(full.length);
    expect(since.every((r) => r.createdAt >= middle)).toBe(true);

    const bad = await owner.client.fetch('/api/audit-log?cursor=garbage');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
    expect((await owner.client.fetch('/api/audit-log?action=not_an_action')).status).toBe(400);
  });

  it('is readable by admins and owners only: members get 403 not_admin_or_owner, keys need mcp:admin and an admin or owner behind them', async () => {
    const { owner, admin, orgId } = await history();
    expect((await admin.client.fetch('/api/audit-log')).status).toBe(200);
    const member = await newSignedInUser(gw);
    const inv = await invite(owner, 'member');
    await member.client.fetch('/api/invitations/accept', { method: 'POST', json: { token: inv.token } });
    await switchTo(member, orgId);
    const refused = await member.client.fetch('/api/audit-log');
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('not_admin_or_owner');

    const { keys } = gw.gateway.services;
    const adminKey = (await keys.create({ organizationId: orgId, userId: admin.userId, name: 'admin', scope: 'mcp:admin' })).key;
    const readKey = (await keys.create({ organizationId: orgId, userId: owner.userId, name: 'read', scope: 'mcp:read' })).key;
    expect((await fetchJson(`${gw.url}/api/audit-log`, { key: adminKey })).status).toBe(200);
    const scoped = await fetchJson(`${gw.url}/api/audit-log`, { key: readKey });
    expect(scoped.status).toBe(403);
    expect(scoped.body.code).toBe('insufficient_scope');

    // The same mcp:admin key stops reading the log once its user is demoted.
    expect((await owner.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'PATCH', json: { role: 'member' } })).status).toBe(200);
    const demoted = await fetchJson(`${gw.url}/api/audit-log`, { key: adminKey });
    expect(demoted.status).toBe(403);
    expect(demoted.body.code).toBe('not_admin_or_owner');
  });

  it("never shows another organization's rows", async () => {
    const a = await history();
    const b = await history();
    const aRows = await readAll(a.owner);
    const bIds = new Set((await readAll(b.owner)).map((r) => r.id));
    expect(aRows.some((r) => bIds.has(r.id))).toBe(false);
    const bUsers = [b.owner.userId, b.admin.userId, b.member.userId];
    expect(aRows.some((r) => bUsers.includes(r.actor.userId) || bUsers.includes(r.target))).toBe(false);
  });

  it('is append-only: earlier rows are unchanged after further actions, and no code updates or deletes a row', async () => {
    const { owner, admin } = await history();
    const store = gw.gateway.services.store;
    const before = await store.selectFrom('audit_log').selectAll().orderBy('id').execute();
    // More actions, including ones that touch the same targets.
    await owner.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'PATCH', json: { role: 'member' } });
    await owner.client.fetch(`/api/organization/members/${admin.userId}`, { method: 'DELETE' });
    await invite(owner, 'admin');
    const after = await store.selectFrom('audit_log').selectAll().orderBy('id').execute();
    expect(after.length).toBeGreaterThan(before.length);
    const byId = new Map(after.map((r) => [r.id, r]));
    for (const row of before) expect(byId.get(row.id)).toEqual(row);

    // No source file writes to the table other than by insert.
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (file.endsWith('.ts')) {
          const text = fs.readFileSync(file, 'utf8');
          if (/(updateTable|deleteFrom)\(\s*['"]audit_log['"]/.test(text) || /(update|delete\s+from)\s+["`]?audit_log\b/i.test(text)) offenders.push(file);
        }
      }
    };
    for (const dir of ['src', 'tools']) walk(path.join(import.meta.dirname, '..', dir));
    expect(offenders).toEqual([]);
  });

  it('never holds a secret: invitation tokens and session cookies appear in no row and no answer of the log', async () => {
    const { owner, secrets } = await history();
    expect(secrets.length).toBeGreaterThan(5);
    const table = JSON.stringify(await gw.gateway.services.store.selectFrom('audit_log').selectAll().execute());
    const answer = JSON.stringify(await readAll(owner));
    for (const secret of secrets) {
      expect(table).not.toContain(secret);
      expect(answer).not.toContain(secret);
    }
  });

  it('lists rows written within the same millisecond newest first, in the order they were written', async () => {
    const { owner } = await history();
    const orgId = owner.ownOrganizationId;
    // Back to back, so most pairs land in one millisecond (the random row id used to decide their order).
    const written: string[] = [];
    for (let i = 0; i < 20; i++) {
      const target = `same-ms-${i}`;
      await recordAudit(gw.gateway.services.store, { organizationId: orgId, actor: { kind: 'cli' }, action: 'invitation_created', target });
      written.push(target);
    }
    const { rows } = await queryAuditLog(gw.gateway.services.store, orgId, { limit: 100, action: 'invitation_created' });
    const ours = rows.map((r) => r.target).filter((t): t is string => Boolean(t?.startsWith('same-ms-')));
    expect(ours).toEqual([...written].reverse());
  });

  describe('export', () => {
    /** The gated call: the challenge, then the signed retry. */
    async function exportAs(user: SignedInUser, json: Record<string, unknown>) {
      const first = await user.client.fetch('/api/audit-log/export', { method: 'POST', json });
      if (first.status !== 401 || first.body.code !== 'signature_required') return { first, done: first };
      const signature = await user.account.signMessage({ message: first.body.challenge });
      return { first, done: await user.client.fetch('/api/audit-log/export', { method: 'POST', json: { ...json, signature } }) };
    }

    it('is behind step-up audit_export: a challenge first, then every row as JSON lines, newest first, with no secret', async () => {
      const { owner, secrets } = await history();
      const { first, done } = await exportAs(owner, { format: 'jsonl' });
      expect(first.status).toBe(401);
      expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({ format: 'jsonl', contentType: 'application/x-ndjson', truncated: false });
      const lines = (done.body.content as string)
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toHaveLength(done.body.rowCount);
      const listed = await readAll(owner);
      // The listing now also holds the export's own row and the step-up rows written while exporting.
      const exportedIds = new Set(lines.map((r) => r.id));
      expect(listed.filter((r) => exportedIds.has(r.id))).toEqual(lines);
      expect(listed[0]).toMatchObject({ action: 'audit_log_exported', actor: { userId: owner.userId }, details: { format: 'jsonl', rowCount: lines.length } });
      // The step-up that let the export through is its newest row.
      expect(lines[0]).toMatchObject({ action: 'step_up_succeeded', target: 'audit_export', actor: { userId: owner.userId } });
      for (const secret of secrets) expect(done.body.content).not.toContain(secret);
    });

    it('exports CSV with the filters applied', async () => {
      const { owner } = await history();
      const { done } = await exportAs(owner, { format: 'csv', action: 'invitation_created' });
      expect(done.status).toBe(200);
      const lines = (done.body.content as string).trimEnd().split('\r\n');
      expect(lines[0]).toBe(AUDIT_CSV_COLUMNS.join(','));
      expect(lines).toHaveLength(4);
      expect(lines.slice(1).every((l) => l.split(',')[2] === 'invitation_created')).toBe(true);
    });

    it('refuses members with 403 not_admin_or_owner before any challenge', async () => {
      const { owner, orgId } = await history();
      const member = await newSignedInUser(gw);
      const inv = await invite(owner, 'member');
      await member.client.fetch('/api/invitations/accept', { method: 'POST', json: { token: inv.token } });
      await switchTo(member, orgId);
      const res = await member.client.fetch('/api/audit-log/export', { method: 'POST', json: {} });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('not_admin_or_owner');
      expect(res.body).not.toHaveProperty('challenge');
    });

    it('CSV cells a spreadsheet would run as a formula are neutralised, quotes and commas escaped', () => {
      const csv = auditRowsToCsv([
        {
          id: 'r1',
          action: 'sign_in_failed',
          actor: { kind: 'anonymous', userId: null, credentialId: null },
          target: '=HYPERLINK("http://evil.example","x")',
          outcome: 'failure',
          ip: '127.0.0.1',
          details: { reason: 'a, "quoted" reason' },
          createdAt: '2026-01-01T00:00:00.000Z',
        },
      ]);
      const row = csv.split('\r\n')[1]!;
      expect(row).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
      expect(row).toContain('"{""reason"":""a, \\""quoted\\"" reason""}"');
    });
  });
});

describe('credentials leave a trail', () => {
  it('webhook keys created and revoked, integrations created, changed and deleted: each an audit row, never a secret', async () => {
    const owner = await newSignedInUser(gw);
    const api = owner.client.fetch;
    const key = await api('/api/api-keys', { method: 'POST', json: { name: 'partner hook' } });
    expect(key.status).toBe(201);
    expect((await api(`/api/api-keys/${key.body.id}`, { method: 'DELETE' })).status).toBe(200);
    const secret = 'xoxb-audit-secret-0001';
    const created = await api('/api/integrations', { method: 'POST', json: { name: 'alerts', type: 'slack', config: { botToken: secret, channel: '#ops' } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api(`/api/integrations/${created.body.id}`, { method: 'PUT', json: { config: { channel: '#alerts' } } })).status).toBe(200);
    expect((await api(`/api/integrations/${created.body.id}`, { method: 'DELETE' })).status).toBe(200);

    const rows = (await api('/api/audit-log?limit=200')).body.rows as { action: string; target: string; details: Record<string, unknown> }[];
    const about = (id: string) => rows.filter((r) => r.target === id).map((r) => [r.action, r.details.kind ?? r.details.change]);
    expect(about(key.body.id)).toEqual([
      ['key_revoked', 'wfb'],
      ['key_created', 'wfb'],
    ]);
    expect(about(created.body.id)).toEqual([
      ['integration_changed', 'deleted'],
      ['integration_changed', 'updated'],
      ['integration_changed', 'created'],
    ]);
    expect(rows.find((r) => r.target === created.body.id && r.details.change === 'created')!.details).toMatchObject({
      type: 'slack',
      fields: 'botToken,channel',
    });
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(JSON.stringify(rows)).not.toContain(key.body.key);
  });
});

describe('credential changes and their audit rows commit together', () => {
  it('when the audit row cannot be written, no webhook key or integration is created, changed or deleted', async () => {
    const owner = await newSignedInUser(gw);
    const api = owner.client.fetch;
    const { store } = gw.gateway.services;
    const kept = await api('/api/integrations', {
      method: 'POST',
      json: { name: 'kept', type: 'slack', config: { botToken: 'xoxb-kept-0001', channel: '#ops' } },
    });
    const hook = await api('/api/api-keys', { method: 'POST', json: { name: 'kept hook' } });
    const undo = await refuseAuditInserts(store);
    try {
      expect(
        (await api('/api/integrations', { method: 'POST', json: { name: 'half', type: 'slack', config: { botToken: 'xoxb-half-0002', channel: '#x' } } }))
          .status,
      ).toBeGreaterThanOrEqual(500);
      expect((await api(`/api/integrations/${kept.body.id}`, { method: 'PUT', json: { name: 'renamed' } })).status).toBeGreaterThanOrEqual(500);
      expect((await api(`/api/integrations/${kept.body.id}`, { method: 'DELETE' })).status).toBeGreaterThanOrEqual(500);
      expect((await api('/api/api-keys', { method: 'POST', json: { name: 'half hook' } })).status).toBeGreaterThanOrEqual(500);
      expect((await api(`/api/api-keys/${hook.body.id}`, { method: 'DELETE' })).status).toBeGreaterThanOrEqual(500);
    } finally {
      await undo();
    }
    const integrations = await store.selectFrom('integrations').select(['id', 'name']).where('organization_id', '=', owner.ownOrganizationId).execute();
    expect(integrations).toEqual([{ id: kept.body.id, name: 'kept' }]);
    const hooks = await store.selectFrom('user_api_keys').select(['id', 'revoked_at']).where('organization_id', '=', owner.ownOrganizationId).execute();
    expect(hooks).toEqual([{ id: hook.body.id, revoked_at: null }]);
  });
});
