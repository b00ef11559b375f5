import { afterAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { newSignedInUser } from './helpers/members.ts';

/**
 * Expired rows are deleted a day after they expire: sessions, sign-in nonces,
 * step-up challenges, rate-limit counters and the rest of EXPIRING_TABLES.
 * Each was refused once expired, but many were never deleted, so anonymous
 * traffic (a nonce per request, a counter per address) grew the shared
 * database for good. An instance sweeps at start and hourly; the test ages
 * rows by two days and starts the gateway again. Rows that expired within the
 * last day, and live ones, stay. Anonymous workflows nobody claimed go after
 * FLOWGATE_ANONYMOUS_WORKFLOW_RETENTION_DAYS (7); claimed ones are the
 * organization's and stay.
 */

const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const gw of gateways) await gw.close().catch(() => {});
});

const DAY = 86_400_000;
const isoAgo = (ms: number) => new Date(Date.now() - ms).toISOString();

describe('expired rows', () => {
  it('are deleted a day after they expire, at the next sweep; live and recently expired rows stay', async () => {
    const env = { FLOWGATE_RATE_LIMIT_SIWE_NONCE_PER_IP: '1000', FLOWGATE_AUDIT_LOG_RETENTION_DAYS: '30' };
    const first = await startTestGateway({ env });
    gateways.push(first);
    const live = await newSignedInUser(first);
    const old = await newSignedInUser(first);
    const lately = await newSignedInUser(first);
    // An unused nonce and a step-up challenge nobody answered.
    expect((await live.client.fetch('/api/auth/siwe/nonce', { method: 'POST', json: { walletAddress: live.account.address, chainId: 1 } })).status).toBe(200);
    expect((await live.client.fetch('/api/keys', { method: 'POST', json: { name: 'never signed' } })).body.code).toBe('signature_required');
    // Two audit rows (organization switches); one will be older than the 30 days audit rows are kept here.
    for (let i = 0; i < 2; i++) {
      expect((await live.client.fetch('/api/auth/organization/switch', { method: 'POST', json: { organizationId: live.ownOrganizationId } })).status).toBe(200);
    }

    const store = first.gateway.services.store;
    const sessionOf = async (userId: string) => (await store.selectFrom('sessions').select('id').where('user_id', '=', userId).executeTakeFirstOrThrow()).id;
    const [liveSession, oldSession, latelySession] = [await sessionOf(live.userId), await sessionOf(old.userId), await sessionOf(lately.userId)];
    await store
      .updateTable('sessions')
      .set({ expires_at: isoAgo(3 * DAY) })
      .where('id', '=', oldSession)
      .execute();
    await store
      .updateTable('sessions')
      .set({ expires_at: isoAgo(60 * 60 * 1000) })
      .where('id', '=', latelySession)
      .execute();
    await store
      .updateTable('siwe_nonces')
      .set({ expires_at: isoAgo(2 * DAY) })
      .execute();
    await store
      .updateTable('step_up_challenges')
      .set({ expires_at: isoAgo(2 * DAY) })
      .execute();
    const switches = await store.selectFrom('audit_log').select('id').where('action', '=', 'organization_switched').orderBy('created_at').execute();
    expect(switches).toHaveLength(2);
    await store
      .updateTable('audit_log')
      .set({ created_at: isoAgo(31 * DAY) })
      .where('id', '=', switches[0]!.id)
      .execute();
    const counters = await store.selectFrom('rate_limits').select('key').where('key', 'like', 'siweNoncePerIp%').execute();
    expect(counters.length).toBeGreaterThan(0);
    await store
      .updateTable('rate_limits')
      .set({ expire: Date.now() - 2 * DAY })
      .where('key', 'like', 'siweNoncePerIp%')
      .execute();
    expect((await store.selectFrom('siwe_nonces').select('nonce_hash').execute()).length).toBeGreaterThan(0);
    expect((await store.selectFrom('step_up_challenges').select('id').execute()).length).toBeGreaterThan(0);
    // Three anonymous workflows (no key): one left unclaimed past the 7 days, one recent, one claimed and as old.
    const anonymous = async (name: string) => {
      const res = await fetch(`${first.url}/api/workflows/create`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }], edges: [] }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { id: string; claimToken: string };
    };
    const [abandoned, recent, claimed] = [await anonymous('abandoned'), await anonymous('recent'), await anonymous('claimed')];
    const claim = await fetch(`${first.url}/api/workflows/${claimed.id}/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.ownerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ claimToken: claimed.claimToken }),
    });
    expect(claim.status).toBe(200);
    await store
      .updateTable('workflows')
      .set({ created_at: isoAgo(8 * DAY) })
      .where('id', 'in', [abandoned.id, claimed.id])
      .execute();
    await first.close();

    const second = await startTestGateway({ dataDir: first.dataDir, env });
    gateways.push(second);
    const after = second.gateway.services.store;
    const sessions = async () => (await after.selectFrom('sessions').select('id').execute()).map((r) => r.id);
    const deadline = Date.now() + 15_000;
    while ((await sessions()).includes(oldSession)) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The sweep goes table by table: wait for its last one, the audit log (unclaimed workflows come just before).
    while ((await after.selectFrom('audit_log').select('id').where('id', '=', switches[0]!.id).execute()).length > 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const workflows = (await after.selectFrom('workflows').select('id').where('id', 'in', [abandoned.id, recent.id, claimed.id]).execute()).map((r) => r.id);
    expect(workflows.sort()).toEqual([recent.id, claimed.id].sort());
    expect(await sessions()).toEqual(expect.arrayContaining([liveSession, latelySession]));
    expect(await sessions()).not.toContain(oldSession);
    expect(await after.selectFrom('siwe_nonces').select('nonce_hash').execute()).toEqual([]);
    expect(await after.selectFrom('step_up_challenges').select('id').execute()).toEqual([]);
    expect(await after.selectFrom('rate_limits').select('key').where('key', 'like', 'siweNoncePerIp%').execute()).toEqual([]);
    const audited = await after.selectFrom('audit_log').select('id').where('action', '=', 'organization_switched').execute();
    expect(audited.map((r) => r.id)).toEqual([switches[1]!.id]);
    // The live session still signs its user in.
    const me = await fetch(`${second.url}/api/auth/session`, {
      headers: { cookie: (await live.client.jar.getCookieString(first.url)).toString(), origin: second.url },
    });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { user: { id: string } }).user.id).toBe(live.userId);
  }, 90_000);
});
