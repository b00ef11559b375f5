import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeFunctionData, erc20Abi, parseAbi, parseEther, parseUnits, type Address } from 'viem';
import { TEST_USDC_ADDRESS } from '../src/chains/devnet/test-usdc.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { randomAddress } from './helpers/web3.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/** Direct execution against a real anvil (chain 31337) through the real gateway. */

let chain: TestChain;
let gw: TestGateway;
let wallet: Address;
const responses: string[] = [];
/** Everything the gateway process writes to stdout/stderr during these tests. */
const logged: string[] = [];
const realWrite = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };

async function post(path: string, body: unknown, init: { key?: string; headers?: Record<string, string> } = {}) {
  const res = await fetchJson(`${gw.url}${path}`, { method: 'POST', body: JSON.stringify(body), key: init.key ?? gw.ownerKey, headers: init.headers });
  responses.push(JSON.stringify(res.body));
  return res;
}

const recipient = randomAddress;
const usdcBalance = (address: Address) =>
  chain.publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: erc20Abi, functionName: 'balanceOf', args: [address] });

beforeAll(async () => {
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => (
    logged.push(String(chunk)),
    realWrite.out(chunk as string, ...(rest as []))
  )) as typeof process.stdout.write;
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => (
    logged.push(String(chunk)),
    realWrite.err(chunk as string, ...(rest as []))
  )) as typeof process.stderr.write;
  chain = await startTestChain(31337);
  gw = await startTestGateway({
    env: {
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: chain.url,
      FLOWGATE_RATE_LIMITS: 'off',
      EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('5').toString(),
    },
  });
  const org = await gw.gateway.services.organizations.ensure('default');
  wallet = (await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as Address;
});

afterAll(async () => {
  process.stdout.write = realWrite.out;
  process.stderr.write = realWrite.err;
  await gw?.close();
  await chain?.stop();
});

describe('transfer', () => {
  test('native transfer moves exactly the amount and answers 202 with a completed, verified record', async () => {
    const to = recipient();
    const res = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: to.toLowerCase(), amount: '0.0123' });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'completed', pollIntervalHint: 0, sponsored: false, from: wallet, value: parseEther('0.0123').toString() });
    expect(res.body.executionId).toHaveLength(21);
    expect(res.body.transactionHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(res.body.receipts[0]).toMatchObject({ verified: true, receiptStatus: 'success' });
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.0123'));

    const status = await fetchJson(`${gw.url}/api/execute/${res.body.executionId}/status`, { key: gw.ownerKey });
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      executionId: res.body.executionId,
      status: 'completed',
      transactionHash: res.body.transactionHash,
      pollIntervalHint: 0,
    });
    expect(status.headers.get('x-poll-interval-hint')).toBe('0');
  });

  test('ERC-20 transfer of the devnet USDC in human units', async () => {
    const to = recipient();
    const res = await post('/api/execute/transfer', { chainId: '31337', recipientAddress: to, amount: '12.5', tokenAddress: TEST_USDC_ADDRESS });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('completed');
    expect(await usdcBalance(to)).toBe(parseUnits('12.5', 6));
  });

  test('tokenConfig decimals that disagree with the token are refused, nothing signed', async () => {
    const res = await post('/api/execute/transfer', {
      chainId: 31337,
      recipientAddress: recipient(),
      amount: '1',
      tokenAddress: TEST_USDC_ADDRESS,
      tokenConfig: '{"decimals":18,"symbol":"USDC"}',
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'token_decimals_mismatch', configured: 18, onChain: 6 });
  });

  test('a stablecoin transfer over 100 USD is refused with 202 failed and nothing signed', async () => {
    const to = recipient();
    const before = await chain.publicClient.getTransactionCount({ address: wallet });
    const res = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '150', tokenAddress: TEST_USDC_ADDRESS });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('failed');
    expect(res.body.error).toMatch(/^Stablecoin transfer of 150\.0 USDC exceeds the 100\.0 USD per-transaction limit/);
    expect(res.body.transactionHash).toBeUndefined();
    expect(res.body.receipts).toEqual([]);
    expect(await chain.publicClient.getTransactionCount({ address: wallet })).toBe(before);
    expect(await usdcBalance(to)).toBe(0n);
  });

  test('simulate returns the Simulation response and reserves nothing', async () => {
    const caps = await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key: gw.ownerKey });
    const res = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: recipient(), amount: '0.5', simulate: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, status: 'simulated', from: wallet, value: parseEther('0.5').toString(), wouldRevert: false });
    expect(BigInt(res.body.gasEstimate)).toBeGreaterThan(20000n);
    const after = await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key: gw.ownerKey });
    expect(after.body.dailyUsedWei).toBe(caps.body.dailyUsedWei);
  });

  test('a would-revert simulated transfer is a 400 carrying the reason', async () => {
    const res = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: recipient(), amount: '1000000', simulate: true });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 'simulated', wouldRevert: true, success: false, code: 'simulation_failed' });
    expect(res.body.reason).toMatch(/exceeds the balance|insufficient funds/i);
  });
});

describe('bad input is a 400 naming the problem, with nothing signed', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['negative amount', { amount: '-1' }, /must not be negative/],
    ['exponent', { amount: '1e-3' }, /without an exponent/],
    ['too many decimals', { amount: '0.0000000000000000001' }, /19 decimal places; this token has 18/],
    ['empty amount', { amount: '' }, /amount is required/],
    ['leading space', { amount: ' 1' }, /must not contain whitespace \(got " 1"\); send exactly "1"/],
    ['trailing newline', { amount: '0.001\n' }, /must not contain whitespace/],
    ['inner space', { amount: '0. 001' }, /must not contain whitespace/],
    ['plus sign', { amount: '+0.001' }, /without a sign/],
    ['gas multiplier with space', { gasLimitMultiplier: ' 1.5' }, /gasLimitMultiplier must be a decimal/],
    [
      'bad checksum',
      { recipientAddress: '0x8Ba1f109551bD432803012645Ac136ddd64DBA72' },
      /^Invalid recipient address: 0x8Ba1f109551bD432803012645Ac136ddd64DBA72$/,
    ],
    ['short address', { recipientAddress: '0x1234' }, /expected 0x followed by 40 hex characters/],
    ['Solana address', { recipientAddress: '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin' }, /Solana address/],
    ['unknown chain', { chainId: 999999 }, /Unsupported chain/],
    ['chain name in chainId', { chainId: 'bsae' }, /must be numeric/],
  ];
  test.each(cases)('%s', async (_name, patch, message) => {
    const before = await chain.publicClient.getTransactionCount({ address: wallet });
    const res = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: recipient(), amount: '0.001', ...patch });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
    expect(await chain.publicClient.getTransactionCount({ address: wallet })).toBe(before);
  });

  test('a chain that is not enabled on this gateway is refused', async () => {
    const off = await startTestGateway({ env: { FLOWGATE_DEVNET: 'off' } });
    try {
      const res = await fetchJson(`${off.url}/api/execute/transfer`, {
        method: 'POST',
        key: off.ownerKey,
        body: JSON.stringify({ chainId: 31337, recipientAddress: recipient(), amount: '0.001' }),
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'chain_disabled' });
    } finally {
      await off.close();
    }
  });

  test('a network alias typo suggests the right name', async () => {
    const res = await post('/api/execute/transfer', { network: 'bsae', recipientAddress: recipient(), amount: '0.001' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/Did you mean "base"/);
  });
});

describe('versioning', () => {
  test('the deprecated network field works and is signalled; chainId is not', async () => {
    const withNetwork = await post('/api/execute/transfer', { network: 31337, recipientAddress: recipient(), amount: '0.001', simulate: true });
    expect(withNetwork.status).toBe(200);
    expect(withNetwork.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(Date.parse(withNetwork.headers.get('sunset')!)).toBeGreaterThan(Date.now() + 180 * 86400_000 - 86400_000 * 200);
    expect(withNetwork.headers.get('link')).toMatch(/rel="deprecation"/);
    // chainId wins over network; only requests without network are free of the signal.
    const both = await post('/api/execute/transfer', { chainId: 31337, network: 1, recipientAddress: recipient(), amount: '0.001', simulate: true });
    expect(both.status).toBe(200);
    const withChainId = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: recipient(), amount: '0.001', simulate: true });
    expect(withChainId.headers.get('deprecation')).toBeNull();
  });
});

const USDC_ABI = JSON.stringify(erc20Abi);

describe('contract-call', () => {
  test('a view function returns its decoded result without signing', async () => {
    const before = await chain.publicClient.getTransactionCount({ address: wallet });
    const res = await post('/api/execute/contract-call', {
      chainId: 31337,
      contractAddress: TEST_USDC_ADDRESS,
      functionName: 'balanceOf',
      functionArgs: JSON.stringify([wallet]),
      abi: USDC_ABI,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, type: 'read', functionName: 'balanceOf' });
    expect(BigInt(res.body.result)).toBe(await usdcBalance(wallet));
    expect(await chain.publicClient.getTransactionCount({ address: wallet })).toBe(before);
  });

  test('a write is signed, verified and recorded; raw calldata decodes to the same typed call', async () => {
    const spender = recipient();
    const res = await post('/api/execute/contract-call', {
      chainId: 31337,
      contractAddress: TEST_USDC_ADDRESS,
      abiFunction: 'approve',
      functionArgs: JSON.stringify([spender, '5000000']),
      abi: USDC_ABI,
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'completed', result: { functionName: 'approve', args: [spender, '5000000'] } });
    expect(await chain.publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: erc20Abi, functionName: 'allowance', args: [wallet, spender] })).toBe(
      5_000_000n,
    );

    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, 7_000_000n] });
    const viaData = await post('/api/execute/contract-call', { chainId: 31337, contractAddress: TEST_USDC_ADDRESS, data, abi: USDC_ABI });
    expect(viaData.body).toMatchObject({ status: 'completed', result: { functionName: 'approve', args: [spender, '7000000'] } });
  });

  test('approving more than 100 USD of a stablecoin to a non-protocol spender is refused, nothing signed', async () => {
    const before = await chain.publicClient.getTransactionCount({ address: wallet });
    const res = await post('/api/execute/contract-call', {
      chainId: 31337,
      contractAddress: TEST_USDC_ADDRESS,
      functionName: 'approve',
      functionArgs: JSON.stringify([recipient(), '150000000']),
      abi: USDC_ABI,
    });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('failed');
    expect(res.body.error).toMatch(/exceeds the 100\.0 USD per-transaction limit/);
    expect(await chain.publicClient.getTransactionCount({ address: wallet })).toBe(before);
  });

  test('increaseAllowance is an approval too, and any other call to a stablecoin is refused; lowering an allowance is not', async () => {
    const spender = recipient();
    const before = await chain.publicClient.getTransactionCount({ address: wallet });
    const call = (data: string) =>
      post('/api/execute/contract-call', { chainId: 31337, contractAddress: TEST_USDC_ADDRESS, data, abi: JSON.stringify(allowanceAbi) });
    const allowanceAbi = parseAbi([
      'function increaseAllowance(address spender, uint256 amount)',
      'function decreaseAllowance(address spender, uint256 amount)',
      'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
    ]);
    // Before: increaseAllowance was not weighed, and 5,000 USDC of allowance went to a stranger.
    const raised = await call(encodeFunctionData({ abi: allowanceAbi, functionName: 'increaseAllowance', args: [spender, 5_000_000_000n] }));
    expect(raised.status, JSON.stringify(raised.body)).toBe(202);
    expect(raised.body).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^Stablecoin approval of 5000\.0 USDC to a non-protocol spender exceeds/),
    });
    const permit = await call(
      encodeFunctionData({ abi: allowanceAbi, functionName: 'permit', args: [wallet, spender, 1n, 0n, 27, `0x${'11'.repeat(32)}`, `0x${'22'.repeat(32)}`] }),
    );
    expect(permit.body).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('is not one this gateway signs for a stablecoin (selector 0xd505accf)'),
    });
    expect(await chain.publicClient.getTransactionCount({ address: wallet })).toBe(before);
    expect(await chain.publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: erc20Abi, functionName: 'allowance', args: [wallet, spender] })).toBe(0n);

    const lowered = await call(encodeFunctionData({ abi: allowanceAbi, functionName: 'decreaseAllowance', args: [spender, 0n] }));
    expect(lowered.status).toBe(202);
    expect(lowered.body.error ?? '').not.toMatch(/not one this gateway signs|per-transaction limit/);
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    [
      'functionName and abiFunction disagree',
      { functionName: 'approve', abiFunction: 'transfer' },
      /functionName "approve" and abiFunction "transfer" disagree/,
    ],
    ['ABI is not JSON', { abi: '[{not json' }, /abi must be valid JSON/],
    ['ABI is not an array', { abi: '{"type":"function"}' }, /JSON array of ABI entries/],
    ['function missing', { functionName: 'aprove' }, /no function "aprove". Did you mean "approve"/],
    ['argument count', { functionArgs: '["0x0000000000000000000000000000000000000001"]' }, /approve takes 2 argument/],
    ['argument type', { functionArgs: '["not-an-address", "1"]' }, /functionArgs do not fit approve/],
    ['functionArgs not an array', { functionArgs: '{"a":1}' }, /JSON array string/],
    [
      'errorAbis with no error',
      { errorAbis: [JSON.stringify([{ type: 'function', name: 'f', inputs: [], outputs: [], stateMutability: 'view' }])] },
      /declares no buildable error/,
    ],
    ['too many errorAbis', { errorAbis: Array.from({ length: 5 }, () => '[{"type":"error","name":"E","inputs":[]}]') }, /at most 4 documents/],
    ['errorAbis over 16 KB', { errorAbis: [JSON.stringify([{ type: 'error', name: 'E'.repeat(17000), inputs: [] }])] }, /at most 16 KB/],
  ];
  test.each(bad)('400 when %s', async (_name, patch, message) => {
    const res = await post('/api/execute/contract-call', {
      chainId: 31337,
      contractAddress: TEST_USDC_ADDRESS,
      functionName: 'approve',
      functionArgs: JSON.stringify([recipient(), '1']),
      abi: USDC_ABI,
      ...patch,
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(message);
  });
});

describe('check-and-execute', () => {
  test('writes only when the condition holds, and returns an execution id either way', async () => {
    const spender = recipient();
    const base = {
      chainId: 31337,
      contractAddress: TEST_USDC_ADDRESS,
      functionName: 'allowance',
      functionArgs: JSON.stringify([wallet, spender]),
      abi: USDC_ABI,
    };
    const action = { contractAddress: TEST_USDC_ADDRESS, functionName: 'approve', functionArgs: JSON.stringify([spender, '3000000']), abi: USDC_ABI };
    const notMet = await post('/api/execute/check-and-execute', { ...base, condition: { operator: 'gt', value: '0' }, action });
    expect(notMet.status).toBe(202);
    expect(notMet.body).toMatchObject({ status: 'completed', result: { conditionMet: false, readResult: '0' } });
    expect(notMet.body.executionId).toHaveLength(21);
    expect(notMet.body.transactionHash).toBeUndefined();

    const met = await post('/api/execute/check-and-execute', { ...base, condition: { operator: 'eq', value: 0 }, action });
    expect(met.body).toMatchObject({ status: 'completed', result: { conditionMet: true } });
    expect(met.body.transactionHash).toMatch(/^0x/);
    expect(await chain.publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: erc20Abi, functionName: 'allowance', args: [wallet, spender] })).toBe(
      3_000_000n,
    );
  });
});

describe('MCP tools', () => {
  test('execute_transfer with snake_case arguments and a numeric chain_id', async () => {
    const client = await connectMcp(gw.url, gw.ownerKey);
    const to = recipient();
    const sent = await callTool(client, 'execute_transfer', { chain_id: 31337, to_address: to, amount: 0.002 });
    expect(sent.isError).toBe(false);
    expect(sent.body.status).toBe('completed');
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.002'));
    const status = await callTool(client, 'get_direct_execution_status', { executionId: sent.body.executionId });
    expect(status.body.status).toBe('completed');
    const bad = await callTool(client, 'execute_transfer', { chain_id: 31337, to_address: '0x8Ba1f109551bD432803012645Ac136ddd64DBA72', amount: '1' });
    expect(bad.isError).toBe(true);
    expect(bad.body.error).toBe('Invalid recipient address: 0x8Ba1f109551bD432803012645Ac136ddd64DBA72');
    const limits = await callTool(client, 'get_spending_limits');
    expect(BigInt(limits.body.dailyUsedWei)).toBeGreaterThan(0n);
    await client.close();
  });
});

test('no response ever carries wallet key material', async () => {
  const org = await gw.gateway.services.organizations.ensure('default');
  const row = await gw.gateway.services.store
    .selectFrom('wallets')
    .select(['evm_key_encrypted'])
    .where('organization_id', '=', org.organization.id)
    .executeTakeFirstOrThrow();
  const key = gw.gateway.services.secrets.open(row.evm_key_encrypted, org.organization.id).replace(/^0x/, '');
  expect(responses.length).toBeGreaterThan(10);
  for (const text of [...responses, ...logged]) {
    expect(text.toLowerCase()).not.toContain(key.toLowerCase());
  }
  for (const text of responses) expect(text).not.toContain(chain.url);
});
