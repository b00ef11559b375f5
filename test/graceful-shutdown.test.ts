import net from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { parseEther, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, openTestStoreFor, startTestGateway, tempDir, testDatabaseEnv } from './helpers/gateway.ts';
import { spawnGateway, type SpawnedGateway } from './helpers/instances.ts';
import { randomAddress } from './helpers/web3.ts';
import { browserClient, signIn } from './helpers/session.ts';

/**
 * SIGTERM on a serving gateway (a deploy, a scale-down): it stops taking
 * connections at once, a transfer waiting for its receipt still gets its
 * answer and its record, and an open event stream is ended rather than
 * holding the stop until the grace runs out. With no grace it closes at once.
 */

let chain: TestChain;
let gateway: SpawnedGateway | undefined;
let ownerKey: string;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  // No mining until the test mines: a transfer waits for its receipt as long as the test wants.
  chain = await startTestChain(31337, ['--no-mining']);
  dataDir = tempDir();
  env = {
    ...(await testDatabaseEnv(dataDir, undefined)),
    FLOWGATE_MASTER_KEY: 'ef'.repeat(32),
    FLOWGATE_RPC_URL_31337: chain.url,
    FLOWGATE_RATE_LIMITS: 'off',
    // Long enough that only finishing (or ending) what is in flight lets the process exit within the test.
    FLOWGATE_SHUTDOWN_GRACE_MS: '600000',
  };
  const seed = await startTestGateway({ dataDir, env });
  ownerKey = seed.ownerKey;
  await seed.close();
  gateway = await spawnGateway(env, { dataDir });
  const wallet = await fetchJson(`${gateway.url}/api/user/wallet`, { key: ownerKey });
  await chain.setBalance(wallet.body.walletAddress, '10');
}, 120_000);

afterAll(async () => {
  await gateway?.kill();
  await chain?.stop();
});

/** Resolves once a new connection to `url` is refused (the server stopped listening). */
async function refused(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  for (;;) {
    const outcome = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(port), hostname);
      socket.once('connect', () => (socket.destroy(), resolve('accepted')));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    if (outcome === 'ECONNREFUSED') return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('SIGTERM stops new connections, lets transfers in flight finish with their records (also one whose caller hung up), and ends event streams', async () => {
  const send = (signal?: AbortSignal) =>
    fetchJson(`${gateway!.url}/api/execute/transfer`, {
      method: 'POST',
      key: ownerKey,
      body: JSON.stringify({ chainId: 31337, recipientAddress: randomAddress(), amount: '0.01' }),
      signal,
    });
  const transfer = send();
  // A second caller hangs up once its transfer is broadcast: the gateway still owes it a record.
  const hangUp = new AbortController();
  const abandoned = send(hangUp.signal).catch(() => 'hung up');

  // An open subscription: the analytics stream of a signed-in browser.
  const browser = browserClient(gateway!.url);
  await signIn(browser, gateway!.url, privateKeyToAccount(generatePrivateKey()));
  const cookie = await browser.jar.getCookieString(gateway!.url);
  const stream = await fetch(`${gateway!.url}/api/analytics/stream`, { headers: { cookie, origin: gateway!.url } });
  expect(stream.status).toBe(200);
  const streamEnded = stream.body!.pipeTo(new WritableStream()).then(
    () => 'ended',
    () => 'cut',
  );

  // The transfer is broadcast and waits for a block when the signal comes.
  const wallet = (await fetchJson(`${gateway!.url}/api/user/wallet`, { key: ownerKey })).body.walletAddress as Hex;
  while ((await chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'pending' })) < 2) await new Promise((r) => setTimeout(r, 20));
  hangUp.abort();
  expect(await abandoned).toBe('hung up');
  const exited = gateway!.stop(); // SIGTERM; resolves when the process has exited
  await refused(gateway!.url);
  expect(await streamEnded).toBe('ended');

  await chain.testClient.mine({ blocks: 1 });
  const answer = await transfer;
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  expect(answer.body).toMatchObject({ status: 'completed', transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  expect((await chain.publicClient.getTransactionReceipt({ hash: answer.body.transactionHash })).status).toBe('success');
  await exited;
  // Both records are complete, the abandoned caller's too: the store outlived every handler.
  const store = await openTestStoreFor(dataDir);
  try {
    const rows = await store.selectFrom('direct_executions').select(['status', 'transaction_hash']).execute();
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatchObject({ status: 'completed', transaction_hash: expect.stringMatching(/^0x/) });
  } finally {
    await store.destroy();
  }
});

test('FLOWGATE_SHUTDOWN_GRACE_MS=0: SIGTERM closes at once; a transfer still waiting for its receipt is cut off, and its record keeps the hash for recovery', async () => {
  // The test above used the default daily cap.
  gateway = await spawnGateway({ ...env, FLOWGATE_SHUTDOWN_GRACE_MS: '0', EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('1').toString() }, { dataDir });
  const wallet = (await fetchJson(`${gateway.url}/api/user/wallet`, { key: ownerKey })).body.walletAddress as Hex;
  const before = await chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'pending' });
  const transfer = fetchJson(`${gateway.url}/api/execute/transfer`, {
    method: 'POST',
    key: ownerKey,
    body: JSON.stringify({ chainId: 31337, recipientAddress: randomAddress(), amount: '0.01' }),
  }).then(
    (answer) => `answered ${answer.status}: ${JSON.stringify(answer.body)}`,
    () => 'cut',
  );
  let settled: string | undefined;
  void transfer.then((outcome) => (settled = outcome));
  while ((await chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'pending' })) === before) {
    expect(settled).toBeUndefined();
    await new Promise((r) => setTimeout(r, 20));
  }
  // Nothing is mined: with any grace the process would wait for this receipt (600 s in the test above).
  await gateway.stop();
  expect(await transfer).toBe('cut');
  const store = await openTestStoreFor(dataDir);
  try {
    const rows = await store.selectFrom('direct_executions').select(['status', 'transaction_hash']).orderBy('created_at', 'desc').execute();
    expect(rows[0]).toMatchObject({ status: 'pending', transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  } finally {
    await store.destroy();
  }
  await chain.testClient.mine({ blocks: 1 });
});
