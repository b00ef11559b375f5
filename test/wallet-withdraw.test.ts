import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { addMember, newSignedInUser, switchTo, type SignedInUser } from './helpers/members.ts';
import { randomAddress } from './helpers/web3.ts';

/** Withdrawal from the organization wallet on a real anvil chain: owners, step-up wallet_withdraw, caps still apply. */

let chain: TestChain;
let gw: TestGateway;
let owner: SignedInUser;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url } });
  owner = await newSignedInUser(gw);
  const { services } = gw.gateway;
  await services.devnet!.fund((await services.organizations.wallet(owner.ownOrganizationId))!.walletAddress, { eth: '1' });
});
afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

async function withdraw(user: SignedInUser, json: Record<string, unknown>, headers: Record<string, string> = {}) {
  const first = await user.client.fetch('/api/organization/wallet/withdraw', { method: 'POST', json, headers });
  if (first.status !== 401 || first.body.code !== 'signature_required') return { first, done: first };
  const signature = await user.account.signMessage({ message: first.body.challenge });
  return { first, done: await user.client.fetch('/api/organization/wallet/withdraw', { method: 'POST', json: { ...json, signature }, headers }) };
}

describe('wallet withdrawal', () => {
  it('sends funds out after step-up, audited; an Idempotency-Key replays instead of sending twice', async () => {
    const to = randomAddress();
    const { first, done } = await withdraw(owner, { chainId: 31337, recipientAddress: to, amount: '0.004' }, { 'idempotency-key': 'w-1' });
    expect(first.status).toBe(401);
    expect(first.body.code).toBe('signature_required');
    expect(done.status).toBe(202);
    expect(done.body).toMatchObject({ status: 'completed', transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.004'));

    const again = await withdraw(owner, { chainId: 31337, recipientAddress: to, amount: '0.004' }, { 'idempotency-key': 'w-1' });
    expect(again.done.body).toMatchObject({ executionId: done.body.executionId, idempotentReplay: true });
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.004'));

    const rows = (await owner.client.fetch('/api/audit-log?action=wallet_withdrawal')).body.rows;
    expect(rows[rows.length - 1]).toMatchObject({
      actor: { userId: owner.userId },
      target: to,
      details: { chainId: 31337, amount: '0.004', executionId: done.body.executionId, status: 'completed' },
    });
  });

  it('a signature for one recipient and amount sends nothing elsewhere: the challenge shows both and binds them', async () => {
    const asked = randomAddress();
    const other = randomAddress();
    const request = { chainId: 31337, recipientAddress: asked, amount: '0.001' };
    const first = await owner.client.fetch('/api/organization/wallet/withdraw', { method: 'POST', json: request });
    expect(first.body.code).toBe('signature_required');
    expect(first.body.challenge).toContain(`"recipientAddress":"${asked}"`);
    expect(first.body.challenge).toContain('"amount":"0.001"');
    const signature = await owner.account.signMessage({ message: first.body.challenge });
    const redirected = await owner.client.fetch('/api/organization/wallet/withdraw', {
      method: 'POST',
      json: { ...request, recipientAddress: other, amount: '0.003', signature },
    });
    expect(redirected.status).toBe(401);
    expect(redirected.body.code).toBe('wallet_signature_invalid');
    expect(await chain.publicClient.getBalance({ address: other })).toBe(0n);
    expect(await chain.publicClient.getBalance({ address: asked })).toBe(0n);
  });

  it('still counts against the daily cap: step-up lifts no limit', async () => {
    const to = randomAddress();
    const { done } = await withdraw(owner, { chainId: 31337, recipientAddress: to, amount: '0.05' });
    expect(done.status).toBe(403);
    expect(done.body).toMatchObject({ code: 'daily_spending_cap_exceeded', error: 'Daily spending cap exceeded' });
    expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
    const rows = (await owner.client.fetch('/api/audit-log?action=wallet_withdrawal')).body.rows;
    expect(rows[0]).toMatchObject({ target: to, outcome: 'failure', details: { code: 'daily_spending_cap_exceeded', amount: '0.05' } });
  });

  it('refuses bad input before any challenge, and admins with 403 not_admin_or_owner', async () => {
    const bad = await owner.client.fetch('/api/organization/wallet/withdraw', {
      method: 'POST',
      json: { chainId: 31337, recipientAddress: '0x123', amount: '1' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).not.toHaveProperty('challenge');
    const admin = await newSignedInUser(gw);
    await addMember(gw, owner.ownOrganizationId, admin.account, 'admin');
    await switchTo(admin, owner.ownOrganizationId);
    const res = await admin.client.fetch('/api/organization/wallet/withdraw', {
      method: 'POST',
      json: { chainId: 31337, recipientAddress: randomAddress(), amount: '0.001' },
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'not_admin_or_owner', required: 'owner' });
    expect(res.body).not.toHaveProperty('challenge');
  });
});
