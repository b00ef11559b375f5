import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair } from '@solana/web3.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { addMember, newSignedInUser, switchTo, type SignedInUser } from './helpers/members.ts';

/** Private-key export of the organization wallet: owners, in a session, behind step-up wallet_export. */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

const exportKeys = (user: SignedInUser, json: Record<string, unknown> = {}) => user.client.fetch('/api/organization/wallet/export', { method: 'POST', json });

describe('wallet key export', () => {
  it("gives the owner, after step-up, the keys that control the organization's addresses; audited without the keys", async () => {
    const owner = await newSignedInUser(gw);
    const first = await exportKeys(owner);
    expect(first.status).toBe(401);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
    expect(first.body).not.toHaveProperty('privateKey');

    const done = await exportKeys(owner, { signature: await owner.account.signMessage({ message: first.body.challenge }) });
    expect(done.status).toBe(200);
    expect(done.headers.get('cache-control')).toBe('no-store');
    const wallet = (await owner.client.fetch('/api/user/wallet')).body;
    expect(done.body.walletAddress).toBe(wallet.walletAddress);
    expect(privateKeyToAccount(done.body.privateKey).address).toBe(wallet.walletAddress);
    expect(Keypair.fromSecretKey(Uint8Array.from(done.body.solanaSecretKey)).publicKey.toBase58()).toBe(wallet.solanaAddress);

    const rows = (await owner.client.fetch('/api/audit-log?action=wallet_exported')).body.rows;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ actor: { userId: owner.userId }, target: wallet.walletAddress });
    const table = JSON.stringify(await gw.gateway.services.store.selectFrom('audit_log').selectAll().execute());
    expect(table).not.toContain(done.body.privateKey.slice(2));
  });

  it('a signature by another wallet is 401 wallet_signature_invalid with no key and no new challenge', async () => {
    const owner = await newSignedInUser(gw);
    const first = await exportKeys(owner);
    const stranger = privateKeyToAccount(generatePrivateKey());
    const res = await exportKeys(owner, { signature: await stranger.signMessage({ message: first.body.challenge }) });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('wallet_signature_invalid');
    expect(res.body).not.toHaveProperty('challenge');
    expect(res.body).not.toHaveProperty('privateKey');
  });

  it('admins get 403 not_admin_or_owner before any challenge; organization keys 401 session_required', async () => {
    const owner = await newSignedInUser(gw);
    const admin = await newSignedInUser(gw);
    await addMember(gw, owner.ownOrganizationId, admin.account, 'admin');
    await switchTo(admin, owner.ownOrganizationId);
    const res = await exportKeys(admin);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'not_admin_or_owner', required: 'owner' });
    expect(res.body).not.toHaveProperty('challenge');
    const byKey = await fetchJson(`${gw.url}/api/organization/wallet/export`, { method: 'POST', key: gw.ownerKey, body: '{}' });
    expect(byKey.status).toBe(401);
    expect(byKey.body.code).toBe('session_required');
  });
});
