import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { loadConfig } from '../src/config.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { addMember, newSignedInUser, switchTo, type SignedInUser } from './helpers/members.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { action, linear, randomAddress, runWorkflow } from './helpers/web3.ts';

/**
 * Spend caps set by owners behind step-up, enforced by the one spend guard on
 * a real anvil chain: a per-chain cap refuses a transfer the organization-wide
 * cap would allow, raising is bounded by the deployment maximum, and every
 * change is audited.
 */

const MAX = parseEther('0.05');
let chain: TestChain;
let gw: TestGateway;
let owner: SignedInUser;
let orgKey: string;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({
    env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_MAX_DAILY_VALUE_CAP_WEI: MAX.toString() },
  });
  owner = await newSignedInUser(gw);
  const { services } = gw.gateway;
  orgKey = (await services.keys.create({ organizationId: owner.ownOrganizationId, userId: owner.userId, name: 'caps', scope: null })).key;
  await services.devnet!.fund((await services.organizations.wallet(owner.ownOrganizationId))!.walletAddress, { eth: '1' });
});
afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

/** The gated PUT: the challenge, then the signed retry. */
async function setCaps(user: SignedInUser, json: Record<string, unknown>) {
  const first = await user.client.fetch('/api/organization/spend-caps', { method: 'PUT', json });
  if (first.status !== 401 || first.body.code !== 'signature_required') return { first, done: first };
  const signature = await user.account.signMessage({ message: first.body.challenge });
  return { first, done: await user.client.fetch('/api/organization/spend-caps', { method: 'PUT', json: { ...json, signature } }) };
}

const transfer = (to: Address, amount: string, extra: Record<string, unknown> = {}) =>
  fetchJson(`${gw.url}/api/execute/transfer`, {
    method: 'POST',
    key: orgKey,
    body: JSON.stringify({ chainId: 31337, recipientAddress: to, amount, ...extra }),
  });

const limits = async () => (await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key: orgKey })).body;

describe('spend caps', () => {
  it('a per-chain cap set by the owner behind step-up refuses a transfer over it on anvil; the limits read it back', async () => {
    const { first, done } = await setCaps(owner, { chainCaps: [{ chainId: 31337, dailyCapWei: parseEther('0.003').toString() }] });
    expect(first.status).toBe(401);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
    expect(done.status).toBe(200);
    expect(done.body.chainCaps).toEqual([
      { chainId: 31337, dailyCapWei: parseEther('0.003').toString(), effectiveDailyCapWei: parseEther('0.003').toString(), dailyUsedWei: '0' },
    ]);
    // REST and MCP read the same caps.
    expect(await limits()).toEqual(done.body);
    const mcp = await connectMcp(gw.url, orgKey);
    try {
      expect((await callTool(mcp, 'get_spending_limits')).structured).toEqual(done.body);
    } finally {
      await mcp.close();
    }

    const to = randomAddress();
    const ok = await transfer(to, '0.002');
    expect(ok.status).toBe(202);
    expect(ok.body.status).toBe('completed');
    // 0.002 + 0.002 passes the chain's 0.003 though the organization-wide 0.02 would allow it.
    const simulated = await transfer(to, '0.002', { simulate: true });
    expect(simulated.body).toMatchObject({ success: false, reason: 'Daily spending cap exceeded', chainId: 31337 });
    const refused = await transfer(to, '0.002');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'daily_spending_cap_exceeded', error: 'Daily spending cap exceeded', chainId: 31337 });
    expect(refused.body.message).toMatch(/chain 31337/);
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.002'));
    expect((await limits()).chainCaps[0].dailyUsedWei).toBe(parseEther('0.002').toString());

    // Removing the chain cap lets the same transfer through under the organization-wide cap.
    expect((await setCaps(owner, { chainCaps: [{ chainId: 31337, dailyCapWei: null }] })).done.status).toBe(200);
    expect((await limits()).chainCaps).toEqual([]);
    expect((await transfer(to, '0.002')).status).toBe(202);
  });

  it('the organization-wide cap may be raised up to the deployment maximum, lowered, and reset to the default', async () => {
    const raised = (await setCaps(owner, { dailyCapWei: parseEther('0.04').toString() })).done;
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({
      dailyCapWei: parseEther('0.04').toString(),
      effectiveDailyCapWei: parseEther('0.04').toString(),
      usingDefaultDailyCap: false,
      maximum: { dailyCapWei: MAX.toString(), dailySolanaCapLamports: '500000000' },
    });

    const used = BigInt((await limits()).dailyUsedWei);
    const lowered = (await setCaps(owner, { dailyCapWei: (used + parseEther('0.001')).toString() })).done;
    expect(lowered.status).toBe(200);
    const refused = await transfer(randomAddress(), '0.002');
    expect(refused.status).toBe(403);
    expect(refused.body.dailyCapWei).toBe((used + parseEther('0.001')).toString());
    expect(refused.body).not.toHaveProperty('chainId');

    const reset = (await setCaps(owner, { dailyCapWei: null, dailySolanaCapLamports: '100000000' })).done;
    expect(reset.body).toMatchObject({
      dailyCapWei: null,
      usingDefaultDailyCap: true,
      effectiveDailyCapWei: parseEther('0.02').toString(),
      dailySolanaCapLamports: '100000000',
      effectiveDailySolanaCapLamports: '100000000',
    });
  });

  it('refuses a value above the deployment maximum, an unknown or non-EVM chain and an empty change before any challenge', async () => {
    const cases: [Record<string, unknown>, number, string][] = [
      [{ dailyCapWei: (MAX + 1n).toString() }, 400, 'cap_above_maximum'],
      [{ chainCaps: [{ chainId: 31337, dailyCapWei: (MAX + 1n).toString() }] }, 400, 'cap_above_maximum'],
      [{ dailySolanaCapLamports: '500000001' }, 400, 'cap_above_maximum'],
      [{ chainCaps: [{ chainId: 999999, dailyCapWei: '1' }] }, 400, 'unsupported_chain'],
      [{ chainCaps: [{ chainId: 101, dailyCapWei: '1' }] }, 400, 'invalid_input'],
      [{ dailyCapWei: '0.5' }, 400, 'invalid_input'],
      [{}, 400, 'invalid_input'],
    ];
    for (const [json, status, code] of cases) {
      const res = await owner.client.fetch('/api/organization/spend-caps', { method: 'PUT', json });
      expect({ json, status: res.status, code: res.body.code, challenge: res.body.challenge }).toEqual({ json, status, code, challenge: undefined });
    }
    expect((await limits()).effectiveDailyCapWei).toBe(parseEther('0.02').toString());
  });

  it('only owners, only in a session: admins get 403 not_admin_or_owner before any challenge, keys 401 session_required', async () => {
    const admin = await newSignedInUser(gw);
    await addMember(gw, owner.ownOrganizationId, admin.account, 'admin');
    await switchTo(admin, owner.ownOrganizationId);
    const res = await admin.client.fetch('/api/organization/spend-caps', { method: 'PUT', json: { dailyCapWei: '1' } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'not_admin_or_owner', required: 'owner' });
    expect(res.body).not.toHaveProperty('challenge');
    const byKey = await fetchJson(`${gw.url}/api/organization/spend-caps`, { method: 'PUT', key: orgKey, body: JSON.stringify({ dailyCapWei: '1' }) });
    expect(byKey.status).toBe(401);
    expect(byKey.body.code).toBe('session_required');
  });

  it('audits every change with the old and new value, and the step-up that allowed it', async () => {
    const rows = (await owner.client.fetch('/api/audit-log?action=spend_cap_changed&limit=200')).body.rows as any[];
    expect(rows.map((r) => r.target)).toEqual(expect.arrayContaining(['chain:31337', 'evm', 'solana']));
    expect(rows.find((r) => r.target === 'chain:31337' && r.details.to === null)).toMatchObject({
      actor: { userId: owner.userId },
      details: { from: parseEther('0.003').toString(), to: null },
    });
    expect(rows.find((r) => r.target === 'evm' && r.details.to === parseEther('0.04').toString())).toMatchObject({ details: { from: null } });
    const stepUps = (await owner.client.fetch('/api/audit-log?action=step_up_succeeded&limit=200')).body.rows as any[];
    expect(stepUps.filter((r) => r.target === 'spend_cap_change').length).toBeGreaterThanOrEqual(rows.length - 1);
  });
});

describe('the per-chain cap on the workflow path', () => {
  it('refuses a workflow transfer-funds step over the chain cap: nothing is sent', async () => {
    const usedOnChain = BigInt((await limits()).dailyUsedWei);
    const cap = usedOnChain + parseEther('0.001');
    expect((await setCaps(owner, { chainCaps: [{ chainId: 31337, dailyCapWei: cap.toString() }] })).done.status).toBe(200);
    const to = randomAddress();
    const run = await runWorkflow(
      gw,
      linear(action('send', 'Send', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.002', recipientAddress: to })),
      {},
      orgKey,
    );
    expect(run.execution.status).toBe('error');
    expect(run.step('send').error).toMatch(/^Daily spending cap exceeded/);
    expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
    expect((await setCaps(owner, { chainCaps: [{ chainId: 31337, dailyCapWei: null }] })).done.status).toBe(200);
  });
});

describe('deployment maximum', () => {
  it('defaults to the default cap, and may not be set below it', () => {
    const base = { FLOWGATE_DATA_DIR: '/tmp/unused', FLOWGATE_DEVNET: 'off' };
    expect(loadConfig({ ...base, EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: '7' }).spend.maxDailyValueCapWei).toBe(7n);
    expect(loadConfig(base).spend.maxDailySolanaValueCapLamports).toBe(500000000n);
    expect(() => loadConfig({ ...base, FLOWGATE_MAX_DAILY_VALUE_CAP_WEI: '1' })).toThrow(/FLOWGATE_MAX_DAILY_VALUE_CAP_WEI must be at least/);
  });
});
