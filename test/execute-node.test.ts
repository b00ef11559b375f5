import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseEther, parseUnits, type Address } from 'viem';
import { TEST_USDC_ADDRESS } from '../src/chains/devnet/test-usdc.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { randomAddress, tokenBalance } from './helpers/web3.ts';

/** POST /api/execute/node and POST /api/execute/gas-top-up against the devnet (a real anvil). */

let chain: TestChain;
let gw: TestGateway;
let wallet: Address;

const post = (path: string, body: unknown, init: { key?: string; headers?: Record<string, string> } = {}) =>
  fetchJson(`${gw.url}${path}`, { method: 'POST', body: JSON.stringify(body), key: init.key ?? gw.ownerKey, headers: init.headers });
const nonce = () => chain.publicClient.getTransactionCount({ address: wallet });
const usdc = JSON.stringify({ mode: 'custom', customToken: { address: TEST_USDC_ADDRESS, symbol: 'USDC', decimals: 6 } });

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RATE_LIMITS: 'off' } });
  const org = await gw.gateway.services.organizations.ensure('default');
  wallet = (await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as Address;
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

describe('POST /api/execute/node', () => {
  test('a read answers 200 with the step output', async () => {
    const res = await post('/api/execute/node', { actionType: 'web3/check-token-balance', config: { network: '31337', address: wallet, tokenConfig: usdc } });
    expect(res.status).toBe(200);
    const raw = await tokenBalance(chain, TEST_USDC_ADDRESS, wallet);
    expect(res.body).toEqual({
      success: true,
      type: 'read',
      actionType: 'web3/check-token-balance',
      output: expect.objectContaining({ balanceRaw: raw.toString(), symbol: 'USDC', decimals: 6, address: wallet }),
    });
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
  });

  test('a tokenConfig.decimals the token disagrees with is the same 400 as a direct transfer, naming the field and the value', async () => {
    const wrong = JSON.stringify({ mode: 'custom', customToken: { address: TEST_USDC_ADDRESS, symbol: 'USDC', decimals: 18 } });
    const read = await post('/api/execute/node', { actionType: 'web3/check-token-balance', config: { network: '31337', address: wallet, tokenConfig: wrong } });
    const transfer = await post('/api/execute/transfer', {
      chainId: 31337,
      recipientAddress: randomAddress(),
      amount: '1',
      tokenAddress: TEST_USDC_ADDRESS,
      tokenConfig: '{"decimals":18,"symbol":"USDC"}',
    });
    for (const res of [read, transfer]) {
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'token_decimals_mismatch', field: 'tokenConfig.decimals', received: 18, configured: 18, onChain: 6 });
      expect(res.body.error).toMatch(/tokenConfig\.decimals is 18 but token 0x[0-9a-fA-F]{40} reports decimals\(\) = 6 on chain 31337/);
    }
  });

  // The default daily cap (0.02 ETH) applies here: amounts stay small.
  test('a write is a direct execution of type node: 202, completed, on chain, readable by status', async () => {
    const to = randomAddress();
    const res = await post('/api/execute/node', {
      actionType: 'web3/transfer-funds',
      config: { network: '31337', amount: '0.0042', recipientAddress: to },
      simulate: false,
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      type: 'node',
      status: 'completed',
      from: wallet,
      to,
      value: parseEther('0.0042').toString(),
      result: { actionType: 'web3/transfer-funds' },
    });
    expect(res.body.receipts[0]).toMatchObject({ verified: true, receiptStatus: 'success' });
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.0042'));

    const status = await fetchJson(`${gw.url}/api/execute/${res.body.executionId}/status`, { key: gw.ownerKey });
    expect(status.body).toMatchObject({ executionId: res.body.executionId, type: 'node', status: 'completed', transactionHash: res.body.transactionHash });
  });

  test('the stablecoin limit applies: 202 failed, nothing signed', async () => {
    const before = await nonce();
    const res = await post('/api/execute/node', {
      actionType: 'web3/transfer-token',
      config: { network: '31337', tokenConfig: usdc, amount: '150', recipientAddress: randomAddress() },
    });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('failed');
    expect(res.body.error).toMatch(/^Stablecoin transfer of 150\.0 USDC exceeds the 100\.0 USD per-transaction limit/);
    expect(await nonce()).toBe(before);
  });

  test('Idempotency-Key replays the first write', async () => {
    const to = randomAddress();
    const body = { actionType: 'web3/transfer-token', config: { network: '31337', tokenConfig: usdc, amount: '1.5', recipientAddress: to } };
    const headers = { 'Idempotency-Key': `node-${to}` };
    const first = await post('/api/execute/node', body, { headers });
    const again = await post('/api/execute/node', body, { headers });
    expect(again.body).toMatchObject({ executionId: first.body.executionId, idempotentReplay: true });
    expect(await tokenBalance(chain, TEST_USDC_ADDRESS, to)).toBe(parseUnits('1.5', 6));
  });

  test.each([
    ['top level', { simulate: true, config: { network: '31337', amount: '0.01', recipientAddress: '0x000000000000000000000000000000000000dEaD' } }, 'simulate'],
    [
      'inside config',
      { config: { network: '31337', amount: '0.01', recipientAddress: '0x000000000000000000000000000000000000dEaD', simulate: true } },
      'config.simulate',
    ],
    // Spellings of "yes" that are not `true` went past a list of true values and sent the transfer.
    ...['TRUE', 'yes', 'True', 2, {}].map(
      (value) =>
        [
          `spelled ${JSON.stringify(value)}`,
          { simulate: value, config: { network: '31337', amount: '0.01', recipientAddress: '0x000000000000000000000000000000000000dEaD' } },
          'simulate',
        ] as [string, Record<string, unknown>, string],
    ),
  ])('simulate:true %s is 400 unsupported_param and nothing is signed', async (_where, body, param) => {
    const before = await nonce();
    const res = await post('/api/execute/node', { actionType: 'web3/transfer-funds', ...body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'unsupported_param', param });
    expect(await nonce()).toBe(before);
  });

  test('an unknown actionType suggests the closest runnable one', async () => {
    const res = await post('/api/execute/node', { actionType: 'web3/chek-balance', config: { network: '31337', address: wallet } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'unknown_action', suggestion: 'web3/check-balance' });
    expect(res.body.error).toMatch(/Did you mean "web3\/check-balance"\?/);
  });

  test('an action that only runs inside a workflow is named as such', async () => {
    const res = await post('/api/execute/node', { actionType: 'Condition', config: { condition: 'true' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('action_not_runnable');
  });

  test('fields sent next to config are pointed out', async () => {
    const res = await post('/api/execute/node', { actionType: 'web3/check-balance', network: '31337', address: wallet });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/config is required.*found network, address at the top level/);
  });

  test('bad config is a 400 naming the field', async () => {
    const res = await post('/api/execute/node', {
      actionType: 'web3/transfer-funds',
      config: { network: '31337', amount: '-1', recipientAddress: randomAddress() },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/amount must not be negative/);
  });

  test('a read-only key may read but not broadcast', async () => {
    const key = await gw.createKey({ scope: 'mcp:read' });
    const read = await post('/api/execute/node', { actionType: 'web3/check-balance', config: { network: '31337', address: wallet } }, { key });
    expect(read.status).toBe(200);
    const before = await nonce();
    const write = await post(
      '/api/execute/node',
      { actionType: 'web3/transfer-funds', config: { network: '31337', amount: '0.01', recipientAddress: randomAddress() } },
      { key },
    );
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('insufficient_scope');
    expect(await nonce()).toBe(before);
  });
});

describe('POST /api/execute/gas-top-up', () => {
  test('on the devnet it raises the wallet balance by the amount', async () => {
    const before = await chain.publicClient.getBalance({ address: wallet });
    const res = await post('/api/execute/gas-top-up', { amount: '2.5' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, chainId: 31337, walletAddress: wallet, amount: '2.5', amountWei: parseEther('2.5').toString() });
    expect(await chain.publicClient.getBalance({ address: wallet })).toBe(before + parseEther('2.5'));
  });

  test('the default is 1 ETH; more than 10 is refused', async () => {
    const before = await chain.publicClient.getBalance({ address: wallet });
    expect((await post('/api/execute/gas-top-up', {})).body.amount).toBe('1');
    expect(await chain.publicClient.getBalance({ address: wallet })).toBe(before + parseEther('1'));
    const tooMuch = await post('/api/execute/gas-top-up', { amount: '10.5' });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.error).toMatch(/10 ETH per top-up maximum/);
  });

  test('a read-only key cannot top up', async () => {
    const res = await post('/api/execute/gas-top-up', {}, { key: await gw.createKey({ scope: 'mcp:read' }) });
    expect(res.status).toBe(403);
  });

  test('without a devnet it answers 409 gas_top_up_unavailable naming the wallet to fund', async () => {
    const plain = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
    try {
      const res = await fetchJson(`${plain.url}/api/execute/gas-top-up`, { method: 'POST', key: plain.ownerKey, body: '{}' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('gas_top_up_unavailable');
      expect(res.body.error).toContain(res.body.walletAddress);
    } finally {
      await plain.close();
    }
  });
});
