import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeFunctionData, erc20Abi, parseEther, parseUnits, type Address, type Hex } from 'viem';
import { TEST_USDC_ADDRESS } from '../src/chains/devnet/test-usdc.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { action, deployToken, edges, installAavePool, linear, randomAddress, runWorkflow, tokenBalance, trigger } from './helpers/web3.ts';

/**
 * Web3 workflow steps end to end: real workflow runs (REST create → execute →
 * poll) against anvil, with balances checked on chain. Chain 31337 is the
 * devnet (test USDC registered as a stablecoin); chain 8453 is a second anvil
 * with a fixture Pool at the real Aave V3 Base address.
 */

const CAP = parseEther('1');
let devnet: TestChain;
let base: TestChain;
let gw: TestGateway;
let wallet: Address;

const usdc = JSON.stringify({ mode: 'custom', customToken: { address: TEST_USDC_ADDRESS, symbol: 'USDC', decimals: 6 } });
const nonce = () => devnet.publicClient.getTransactionCount({ address: wallet });

beforeAll(async () => {
  [devnet, base] = await Promise.all([startTestChain(31337), startTestChain(8453)]);
  gw = await startTestGateway({
    env: {
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: devnet.url,
      FLOWGATE_RPC_URL_8453: base.url,
      FLOWGATE_RATE_LIMITS: 'off',
      EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: CAP.toString(),
    },
  });
  const org = await gw.gateway.services.organizations.ensure('default');
  wallet = (await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as Address;
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([devnet?.stop(), base?.stop()]);
});

describe('read steps', () => {
  test('balances, allowance, read-contract, get-transaction and decode-calldata, chained with templates', async () => {
    const to = randomAddress();
    const seed = await devnet.walletClient(1).sendTransaction({ to, value: parseEther('0.25'), account: devnet.account(1), chain: devnet.chain });
    await devnet.publicClient.waitForTransactionReceipt({ hash: seed });
    const calldata = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, 1_500_000n] });
    const balanceOfAbi = JSON.stringify(erc20Abi.filter((e) => e.type === 'function' && (e.name === 'balanceOf' || e.name === 'transfer')));

    const run = await runWorkflow(
      gw,
      linear(
        action('eth', 'ETH balance', { actionType: 'web3/check-balance', network: '31337', address: '{{@t:Start.who}}' }),
        action('tok', 'USDC balance', { actionType: 'web3/check-token-balance', network: '31337', address: wallet, tokenConfig: usdc }),
        action('allow', 'Allowance', { actionType: 'web3/check-allowance', network: '31337', tokenConfig: usdc, ownerAddress: wallet, spenderAddress: to }),
        action('read', 'Read', {
          actionType: 'web3/read-contract',
          network: '31337',
          contractAddress: TEST_USDC_ADDRESS,
          abi: balanceOfAbi,
          abiFunction: 'balanceOf',
          functionArgs: '["{{@tok:USDC balance.address}}"]',
        }),
        action('tx', 'Get tx', { actionType: 'web3/get-transaction', network: '31337', transactionHash: '{{@t:Start.hash}}' }),
        action('decode', 'Decode', { actionType: 'web3/decode-calldata', calldata: '{{@t:Start.calldata}}', abi: balanceOfAbi }),
      ),
      { who: to, hash: seed, calldata },
    );
    expect(run.execution.status, JSON.stringify(run.execution.error)).toBe('success');
    const usdcRaw = await tokenBalance(devnet, TEST_USDC_ADDRESS, wallet);

    expect(run.step('eth').output).toMatchObject({ success: true, data: { balance: '0.25', balanceWei: parseEther('0.25').toString(), address: to } });
    expect(run.step('tok').output.data).toEqual({
      balance: String(Number(usdcRaw) / 1e6),
      balanceRaw: usdcRaw.toString(),
      symbol: 'USDC',
      decimals: 6,
      address: wallet,
      tokenAddress: TEST_USDC_ADDRESS,
    });
    expect(run.step('allow').output.data).toMatchObject({ allowance: '0', allowanceRaw: '0', symbol: 'USDC', decimals: 6 });
    expect(run.step('read').output.data).toEqual({ result: usdcRaw.toString() });
    expect(run.step('tx').output.data).toMatchObject({
      hash: seed,
      from: devnet.account(1).address,
      to,
      value: parseEther('0.25').toString(),
      status: 'success',
      blockNumber: expect.any(Number),
      gasUsed: '21000',
    });
    expect(run.step('decode').output.data).toEqual({
      functionName: 'transfer',
      functionSignature: 'transfer(address,uint256)',
      args: { recipient: to, amount: '1500000' },
      selector: '0xa9059cbb',
    });
  });

  test('a tokenConfig.decimals that disagrees with the token is refused; a non-token address names the failed call', async () => {
    const wrong = JSON.stringify({ mode: 'custom', customToken: { address: TEST_USDC_ADDRESS, symbol: 'USDC', decimals: 18 } });
    const run = await runWorkflow(
      gw,
      linear(action('tok', 'Tok', { actionType: 'web3/check-token-balance', network: '31337', address: wallet, tokenConfig: wrong })),
    );
    expect(run.step('tok').error).toMatch(/tokenConfig\.decimals is 18 but token .* reports decimals\(\) = 6/);
    const notToken = JSON.stringify({ mode: 'custom', customToken: { address: randomAddress(), symbol: 'X', decimals: 6 } });
    const run2 = await runWorkflow(
      gw,
      linear(action('tok', 'Tok', { actionType: 'web3/check-token-balance', network: '31337', address: wallet, tokenConfig: notToken })),
    );
    expect(run2.step('tok').error).toMatch(/web3\/check-token-balance: The contract function "balanceOf" returned no data/);
    expect(run2.step('tok').error).not.toContain(devnet.url);
  });

  test('a bad address fails the step naming the field and the value', async () => {
    const run = await runWorkflow(gw, linear(action('eth', 'ETH balance', { actionType: 'web3/check-balance', network: '31337', address: '0x1234' })));
    expect(run.execution.status).toBe('error');
    expect(run.step('eth').error).toMatch(/Invalid address: 0x1234/);
  });
});

describe('write steps', () => {
  test('transfer-funds moves exactly the amount; the hash is recorded with nodeId, nodeName and chainId; get-transaction reads it back', async () => {
    const to = randomAddress();
    const run = await runWorkflow(
      gw,
      linear(
        action('send', 'Send ETH', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.0123', recipientAddress: to.toLowerCase() }),
        action('check', 'Check tx', { actionType: 'web3/get-transaction', network: '31337', transactionHash: '{{@send:Send ETH.transactionHash}}' }),
      ),
    );
    expect(run.execution.status, JSON.stringify(run.execution.error)).toBe('success');
    expect(await devnet.publicClient.getBalance({ address: to })).toBe(parseEther('0.0123'));

    const out = run.step('send').output;
    expect(out).toMatchObject({ success: true, transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), transactionLink: '' });
    const receipt = await devnet.publicClient.getTransactionReceipt({ hash: out.transactionHash });
    expect(out.gasUsedUnits).toBe(receipt.gasUsed.toString());
    expect(out.effectiveGasPrice).toBe(receipt.effectiveGasPrice.toString());
    expect(out.gasUsed).toBe((receipt.gasUsed * receipt.effectiveGasPrice).toString());
    expect(run.execution.transactionHashes).toEqual([
      expect.objectContaining({ hash: out.transactionHash, nodeId: 'send', nodeName: 'Send ETH', chainId: 31337 }),
    ]);
    expect(run.execution.transactionHashes[0].iterationIndex).toBeUndefined();
    // The terminal verification pass re-fetched the receipt: the run is success only because it verified.
    expect(run.execution.transactionHashes[0]).toMatchObject({ verified: true, receiptStatus: 'success', gasUsed: '21000' });
    expect(run.execution.transactionHashes[0].blockNumber).toBeGreaterThan(0);
    expect(BigInt(run.execution.gasUsedWei)).toBe(BigInt(out.gasUsed));
    expect(run.step('check').output.data).toMatchObject({ hash: out.transactionHash, from: wallet, to, status: 'success' });
  });

  test('transfer-token sends the devnet USDC in human units', async () => {
    const to = randomAddress();
    const run = await runWorkflow(
      gw,
      linear(action('pay', 'Pay', { actionType: 'web3/transfer-token', network: '31337', tokenConfig: usdc, amount: '12.5', recipientAddress: to })),
    );
    expect(run.execution.status).toBe('success');
    expect(run.step('pay').output.success).toBe(true);
    expect(await tokenBalance(devnet, TEST_USDC_ADDRESS, to)).toBe(parseUnits('12.5', 6));
  });

  test('the stablecoin limit refuses a 150 USDC transfer-token step and nothing is signed', async () => {
    const to = randomAddress();
    const before = await nonce();
    const run = await runWorkflow(
      gw,
      linear(action('pay', 'Pay', { actionType: 'web3/transfer-token', network: '31337', tokenConfig: usdc, amount: '150', recipientAddress: to })),
    );
    expect(run.execution.status).toBe('error');
    expect(run.step('pay').output).toMatchObject({
      success: false,
      error: expect.stringMatching(/^Stablecoin transfer of 150\.0 USDC exceeds the 100\.0 USD per-transaction limit/),
    });
    expect(run.execution.transactionHashes).toEqual([]);
    expect(await nonce()).toBe(before);
    expect(await tokenBalance(devnet, TEST_USDC_ADDRESS, to)).toBe(0n);
  });

  test('approve-token then check-allowance', async () => {
    const spender = randomAddress();
    const run = await runWorkflow(
      gw,
      linear(
        action('approve', 'Approve', { actionType: 'web3/approve-token', network: '31337', tokenConfig: usdc, spenderAddress: spender, amount: '42.5' }),
        action('allow', 'Allowance', {
          actionType: 'web3/check-allowance',
          network: '31337',
          tokenConfig: usdc,
          ownerAddress: wallet,
          spenderAddress: spender,
        }),
      ),
    );
    expect(run.execution.status).toBe('success');
    expect(run.step('approve').output).toMatchObject({ success: true, transactionHash: expect.any(String) });
    expect(run.step('allow').output.data).toMatchObject({ allowance: '42.5', allowanceRaw: '42500000' });
    expect(await devnet.publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: erc20Abi, functionName: 'allowance', args: [wallet, spender] })).toBe(
      42_500_000n,
    );
  });

  test('an approval of more than 100 USDC to a non-protocol spender is refused', async () => {
    const before = await nonce();
    const run = await runWorkflow(
      gw,
      linear(
        action('approve', 'Approve', { actionType: 'web3/approve-token', network: '31337', tokenConfig: usdc, spenderAddress: randomAddress(), amount: '500' }),
      ),
    );
    expect(run.step('approve').error).toMatch(/^Stablecoin approval of 500\.0 USDC to a non-protocol spender exceeds/);
    expect(await nonce()).toBe(before);
  });

  test('write-contract sends ethValue to a payable function', async () => {
    const target = randomAddress();
    await devnet.testClient.setCode({ address: target, bytecode: '0x00' }); // STOP: accepts any call and value
    const abi = JSON.stringify([{ type: 'function', name: 'deposit', stateMutability: 'payable', inputs: [{ name: 'memo', type: 'uint256' }], outputs: [] }]);
    const run = await runWorkflow(
      gw,
      linear(
        action('w', 'Deposit', {
          actionType: 'web3/write-contract',
          network: '31337',
          contractAddress: target,
          abi,
          abiFunction: 'deposit',
          functionArgs: '["{{@t:Start.memo}}"]',
          ethValue: '0.002',
        }),
      ),
      { memo: 7 },
    );
    expect(run.execution.status, JSON.stringify(run.execution.error)).toBe('success');
    expect(run.step('w').output.success).toBe(true);
    expect(await devnet.publicClient.getBalance({ address: target })).toBe(parseEther('0.002'));
    const tx = await devnet.publicClient.getTransaction({ hash: run.step('w').output.transactionHash });
    expect(tx.input).toBe(encodeFunctionData({ abi: JSON.parse(abi), functionName: 'deposit', args: [7n] }));
  });

  test('functionName instead of abiFunction fails the step with the abiFunction message', async () => {
    const abi = JSON.stringify(erc20Abi);
    const before = await nonce();
    const run = await runWorkflow(
      gw,
      linear(
        action('w', 'Legacy', {
          actionType: 'web3/write-contract',
          network: '31337',
          contractAddress: TEST_USDC_ADDRESS,
          abi,
          functionName: 'transfer',
          functionArgs: `["${randomAddress()}", "1"]`,
        }),
      ),
    );
    expect(run.execution.status).toBe('error');
    expect(run.step('w').error).toMatch(/abiFunction is missing/);
    expect(await nonce()).toBe(before);
  });

  test('a write that reverts on chain fails the step with the hash in the message', async () => {
    const target = randomAddress();
    await devnet.testClient.setCode({ address: target, bytecode: '0x00' });
    const abi = JSON.stringify([{ type: 'function', name: 'poke', stateMutability: 'nonpayable', inputs: [], outputs: [] }]);
    // Estimation passes against STOP; before the block is mined the code becomes REVERT.
    await devnet.testClient.setAutomine(false);
    try {
      const pending = runWorkflow(
        gw,
        linear(action('w', 'Poke', { actionType: 'web3/write-contract', network: '31337', contractAddress: target, abi, abiFunction: 'poke' })),
      );
      const deadline = Date.now() + 20_000;
      while ((await devnet.publicClient.getBlock({ blockTag: 'pending' })).transactions.length === 0) {
        if (Date.now() > deadline) throw new Error('the write never reached the mempool');
        await new Promise((r) => setTimeout(r, 50));
      }
      await devnet.testClient.setCode({ address: target, bytecode: '0x60006000fd' });
      await devnet.testClient.mine({ blocks: 1 });
      await devnet.testClient.setAutomine(true);
      const run = await pending;
      expect(run.execution.status).toBe('error');
      const [entry] = run.execution.transactionHashes;
      expect(entry).toMatchObject({ nodeId: 'w', nodeName: 'Poke', chainId: 31337 });
      expect(run.step('w').error).toContain(entry.hash);
      expect(run.step('w').error).toMatch(/reverted/);
      expect((await devnet.publicClient.getTransactionReceipt({ hash: entry.hash as Hex })).status).toBe('reverted');
    } finally {
      await devnet.testClient.setAutomine(true);
    }
  });

  test('inside a For Each every transfer records its iterationIndex', async () => {
    const recipients = [randomAddress(), randomAddress()];
    const run = await runWorkflow(
      gw,
      {
        nodes: [
          trigger(),
          action('each', 'Each', { actionType: 'For Each', arraySource: '{{@t:Start.recipients}}' }),
          action('send', 'Send', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.001', recipientAddress: '{{@each:Each.currentItem}}' }),
        ],
        edges: edges(['t', 'each'], ['each', 'send']),
      },
      { recipients },
    );
    expect(run.execution.status, JSON.stringify(run.execution.error)).toBe('success');
    for (const to of recipients) expect(await devnet.publicClient.getBalance({ address: to })).toBe(parseEther('0.001'));
    const entries = run.execution.transactionHashes;
    expect(entries.map((e: any) => [e.nodeId, e.nodeName, e.chainId, e.iterationIndex])).toEqual([
      ['send', 'Send', 31337, 0],
      ['send', 'Send', 31337, 1],
    ]);
  });
});

describe('the daily cap is shared by workflow steps and direct execution', () => {
  test('direct transfers and a workflow transfer-funds together never exceed the cap', async () => {
    // A separate organization: its own wallet and its own daily budget (cap 1 ETH).
    const key = await gw.createKey({ org: 'capped' });
    const { organization } = await gw.gateway.services.organizations.ensure('capped');
    const capped = (await gw.gateway.services.organizations.wallet(organization.id))!.walletAddress as Address;
    await gw.gateway.services.devnet!.fund(capped, { eth: '10' });
    const to = randomAddress();
    const direct = (amount: string) =>
      fetchJson(`${gw.url}/api/execute/transfer`, { method: 'POST', key, body: JSON.stringify({ chainId: 31337, recipientAddress: to, amount }) });

    expect((await direct('0.6')).body.status).toBe('completed');
    const run = await runWorkflow(
      gw,
      linear(action('send', 'Send', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.6', recipientAddress: to })),
      {},
      key,
    );
    expect(run.execution.status).toBe('error');
    expect(run.step('send').error).toMatch(/^Daily spending cap exceeded/);
    expect(run.execution.transactionHashes).toEqual([]);

    const workflowFits = await runWorkflow(
      gw,
      linear(action('send', 'Send', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.3', recipientAddress: to })),
      {},
      key,
    );
    expect(workflowFits.execution.status).toBe('success');
    const over = await direct('0.2');
    expect(over.status).toBe(403);
    expect(over.body.error).toBe('Daily spending cap exceeded');

    const received = await devnet.publicClient.getBalance({ address: to });
    expect(received).toBe(parseEther('0.9'));
    expect(received <= CAP).toBe(true);
    const caps = await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key });
    expect(caps.body.dailyUsedWei).toBe(parseEther('0.9').toString());
  });
});

describe('aave-v3 protocol steps (fixture Pool at the real Base address)', () => {
  test('approve → supply → get-user-account-data', async () => {
    await base.setBalance(wallet, '5');
    const token = await deployToken(base, wallet, parseUnits('1000', 6));
    const pool = await installAavePool(base);
    const tokenConfig = JSON.stringify({ mode: 'custom', customToken: { address: token, symbol: 'tUSD', decimals: 6 } });

    const run = await runWorkflow(
      gw,
      linear(
        action('approve', 'Approve Pool', { actionType: 'web3/approve-token', network: '8453', tokenConfig, spenderAddress: pool, amount: '250' }),
        action('supply', 'Supply', {
          actionType: 'aave-v3/supply',
          network: 'base',
          asset: token,
          amount: '{{@t:Start.raw}}',
          onBehalfOf: '{{@t:Start.wallet}}',
        }),
        action('position', 'Position', { actionType: 'aave-v3/get-user-account-data', network: '8453', user: wallet }),
      ),
      { raw: '250000000', wallet },
    );
    expect(run.execution.status, JSON.stringify(run.execution.error)).toBe('success');
    expect(await tokenBalance(base, token, pool)).toBe(250_000_000n);
    expect(await tokenBalance(base, token, wallet)).toBe(750_000_000n);

    const supply = run.step('supply').output;
    expect(supply).toMatchObject({ success: true, transactionLink: `https://basescan.org/tx/${supply.transactionHash}` });
    expect(run.execution.transactionHashes.map((e: any) => [e.nodeId, e.chainId])).toEqual([
      ['approve', 8453],
      ['supply', 8453],
    ]);
    expect(run.step('position').output.data).toMatchObject({
      totalCollateralBase: '250000000',
      totalDebtBase: '0',
      availableBorrowsBase: '187500000',
      currentLiquidationThreshold: '8250',
      ltv: '7500',
      healthFactor: (2n ** 256n - 1n).toString(),
    });
  });

  test('a protocol action on a chain without the contract names the supported chains', async () => {
    const run = await runWorkflow(gw, linear(action('position', 'Position', { actionType: 'aave-v3/get-user-account-data', network: '31337', user: wallet })));
    expect(run.step('position').error).toMatch(/Aave V3 has no Pool on .*31337.*network must be one of 1, 10, 137, 8453/);
  });
});
