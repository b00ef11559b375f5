import { afterAll, beforeAll, expect, test } from 'vitest';
import { encodeFunctionData, erc20Abi, parseEther, type Hex } from 'viem';
import { TEST_USDC_ADDRESS } from '../src/chains/devnet/test-usdc.ts';
import { reverifyUnconfirmed, settleWithVerification } from '../src/engine/verify-transactions.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { action, linear, randomAddress } from './helpers/web3.ts';
import { createWorkflowViaApi, insertExecution } from './helpers/workflows.ts';

/** The terminal verification pass: every claimed hash re-fetched from a real chain before a run settles. */

let chain: TestChain;
let gw: TestGateway;
let okHash: Hex;
let revertedHash: Hex;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RECEIPT_TIMEOUT_MS: '1000' } });
  const sender = chain.walletClient(3);
  okHash = await sender.sendTransaction({ account: chain.account(3), chain: chain.chain, to: chain.account(4).address, value: parseEther('1') });
  // A fixed gas limit skips estimation, so a transfer the sender cannot cover is mined and reverts.
  revertedHash = await sender.sendTransaction({
    account: chain.account(3),
    chain: chain.chain,
    to: TEST_USDC_ADDRESS,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [chain.account(4).address, 10n ** 12n] }),
    gas: 200_000n,
  });
  await chain.publicClient.waitForTransactionReceipt({ hash: revertedHash });
});

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

const entry = (hash: string) => ({ hash, nodeId: 'send', nodeName: 'Send', chainId: 31337 });

test('every hash verified → success, with receipt fields and the run gas total', async () => {
  const settled = await settleWithVerification(gw.gateway.services, { status: 'success', transactionHashes: [entry(okHash)] });
  expect(settled.status).toBe('success');
  expect(settled.transactionHashes![0]).toMatchObject({ verified: true, receiptStatus: 'success', gasUsed: '21000' });
  expect(settled.transactionHashes![0]!.blockNumber).toBeGreaterThan(0);
  expect(BigInt(settled.gasUsedWei!)).toBeGreaterThan(0n);
});

test('a step that reported success but whose transaction reverted fails the run', async () => {
  const settled = await settleWithVerification(gw.gateway.services, { status: 'success', transactionHashes: [entry(okHash), entry(revertedHash)] });
  expect(settled.status).toBe('error');
  expect(settled.error).toMatch(/reverted on chain/);
  expect(settled.transactionHashes![1]).toMatchObject({ verified: false, receiptStatus: 'reverted' });
});

test('a hash the chain does not know fails closed as not_found', async () => {
  const settled = await settleWithVerification(gw.gateway.services, { status: 'success', transactionHashes: [entry(`0x${'ab'.repeat(32)}`)] });
  expect(settled.status).toBe('error');
  expect(settled.transactionHashes![0]).toMatchObject({ verified: false, receiptStatus: 'not_found' });
});

test('a chain that cannot be read leaves the run unconfirmed; the sweep settles it once it can', async () => {
  const { services } = gw.gateway;
  const realUrl = services.config.rpcUrls[31337]!;
  services.config.rpcUrls[31337] = 'http://127.0.0.1:9'; // nothing listens on the discard port
  const inconclusive = await settleWithVerification(services, { status: 'success', transactionHashes: [entry(okHash)] });
  expect(inconclusive.status).toBe('unconfirmed');
  expect(inconclusive.transactionHashes![0]!.receiptStatus).toBeUndefined();
  services.config.rpcUrls[31337] = realUrl;

  const workflow = await createWorkflowViaApi(gw.url, gw.ownerKey);
  const org = await services.organizations.ensure('default');
  const id = await insertExecution(services.store, workflow.id, org.organization.id);
  await services.store
    .updateTable('workflow_executions')
    .set({ status: 'unconfirmed', completed_at: null, transaction_hashes: JSON.stringify(inconclusive.transactionHashes) })
    .where('id', '=', id)
    .execute();
  const settled = await reverifyUnconfirmed(services);
  expect(settled).toContainEqual({ id, status: 'success' });
  const row = await services.store.selectFrom('workflow_executions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  expect(row.status).toBe('success');
  expect(row.completed_at).not.toBeNull();
  expect(JSON.parse(row.transaction_hashes!)[0]).toMatchObject({ verified: true, receiptStatus: 'success' });
});

test('a run reaped after its gateway stopped mid-run still has its transaction verified from chain', async () => {
  const target = await startHttpTarget();
  const dataDir = tempDir();
  const env = {
    FLOWGATE_DEVNET: 'auto',
    FLOWGATE_RPC_URL_31337: chain.url,
    FLOWGATE_ENGINE_LEASE_MS: '1000',
    FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
    FLOWGATE_RATE_LIMITS: 'off',
  };
  let first: TestGateway | undefined = await startTestGateway({ env, dataDir });
  let second: TestGateway | undefined;
  try {
    const api = (g: TestGateway, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${g.url}${path}`, { key: g.ownerKey, ...init });
    const graph = linear(
      action('send', 'Send', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.001', recipientAddress: randomAddress() }),
      action('hang', 'Hang', { actionType: 'HTTP Request', endpoint: `${target.url}/hang`, httpMethod: 'GET', timeout: 30000 }),
    );
    const created = await api(first, '/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Send then hang', ...graph }) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await api(first, `/api/workflows/${created.body.id}/execute`, { method: 'POST', body: '{}' });
    const executionId = started.body.executionId as string;
    // The transfer is broadcast and mined; the run now waits on the step that never answers.
    for (let i = 0; i < 200 && target.hits.filter((h) => h.url.startsWith('/hang')).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    const midRun = (await api(first, `/api/workflows/executions/${executionId}/status`)).body;
    expect(midRun.status).toBe('running');
    expect(midRun.transactionHashes).toHaveLength(1);
    expect(midRun.transactionHashes[0].receiptStatus).toBeUndefined();

    // The gateway stops with the run in flight: its row stays `running` and its lease lapses.
    await first.close();
    first = undefined;
    second = await startTestGateway({ env, dataDir });
    const final = (await api(second, `/api/workflows/executions/${executionId}/wait?timeoutMs=20000`)).body;
    expect(final).toMatchObject({ status: 'system_error', completed: true });
    const status = (await api(second, `/api/workflows/executions/${executionId}/status`)).body;
    expect(status.errorContext).toMatchObject({ reason: 'lease_expired', currentNodeId: 'hang' });
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: midRun.transactionHashes[0].hash });
    expect(status.transactionHashes[0]).toMatchObject({
      hash: midRun.transactionHashes[0].hash,
      nodeId: 'send',
      verified: true,
      receiptStatus: 'success',
      blockNumber: Number(receipt.blockNumber),
      gasUsed: receipt.gasUsed.toString(),
    });
    expect(final.gasUsedWei).toBe((receipt.gasUsed * receipt.effectiveGasPrice).toString());
  } finally {
    await first?.close();
    await second?.close();
    await target.close();
  }
}, 60_000);
