import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWalletClient, formatEther, http, parseEther, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { sql } from 'kysely';
import { NONCE_GRACE_MS } from '../src/chains/shared-nonces.ts';
import { TEST_USDC_ADDRESS, testUsdcAbi, testUsdcDeployer } from '../src/chains/devnet/test-usdc.ts';
import { loadConfig } from '../src/config.ts';
import { reserveSpend } from '../src/guards/spend-cap.ts';
import { newId } from '../src/ids.ts';
import { openStore, type Store } from '../src/store/db.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson } from './helpers/gateway.ts';
import { startCluster, type Cluster } from './helpers/instances.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';
import { minedTransaction, randomAddress } from './helpers/web3.ts';

/**
 * The money guards with three `flowgate serve` processes on one PostgreSQL
 * database and one anvil (issue #19 "Shared guards"): idempotency keys, the
 * daily cap and the organization wallet's nonces hold across instances.
 * Every claim is checked on the chain, not only in the answers.
 */

const CAP = parseEther('1');
let postgres: TestPostgres;
let chain: TestChain;
let cluster: Cluster;
let db: pg.Pool;
let wallet: Address;

beforeAll(async () => {
  postgres = await startPostgres();
  // Nonces from several senders reach anvil out of order; its automine can then leave ready transactions unmined
  // until another arrives (foundry-rs/foundry#10122). A block every second as well mines any such straggler.
  chain = await startTestChain(31337, ['--mixed-mining', '--block-time', '1']);
  cluster = await startCluster(postgres, {
    count: 3,
    rpcUrl: chain.url,
    env: {
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_RECEIPT_TIMEOUT_MS: '30000',
      EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: CAP.toString(),
      // The devnet's test USDC and paid catalog workflows on the shared anvil (nothing spawned: FLOWGATE_RPC_URL_31337 is set).
      FLOWGATE_DEVNET: 'auto',
      // One public address for all three, as behind a load balancer: a payment names the URL it pays for.
      FLOWGATE_BASE_URL: 'http://localhost:8080',
    },
  });
  db = new pg.Pool({ connectionString: cluster.databaseUrl, max: 2 });
  const { rows } = await db.query<{ evm_address: Address }>(
    `select w.evm_address from wallets w join organizations o on o.id = w.organization_id where o.slug = 'default'`,
  );
  wallet = rows[0]!.evm_address;
  await chain.setBalance(wallet, '100');
}, 120_000);

afterAll(async () => {
  await db?.end();
  await cluster?.close();
  await chain?.stop();
  await postgres?.destroy();
});

/** A transfer sent to instance `i` (mod 3). */
const transfer = (i: number, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  fetchJson(`${cluster.instances[i % cluster.instances.length]!.url}/api/execute/transfer`, {
    method: 'POST',
    key: cluster.ownerKey,
    headers,
    body: JSON.stringify({ chainId: 31337, recipientAddress: randomAddress(), amount: '0.001', ...body }),
  });

const pendingNonce = () => chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'pending' });
const minedNonce = () => chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'latest' });
const consecutive = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

/** The chain nonces of completed records' transactions, each checked mined with success. */
async function minedNonces(records: { status: string; transactionHash?: string }[]): Promise<number[]> {
  let diagnosis = '';
  if (records.some((r) => r.status !== 'completed')) {
    // What the node and the table hold, to tell a gap from a lost transaction when this fails: in the assertion's
    // message, since a CI summary keeps the failure and not what the test printed.
    const [pending, mined, pool, rows] = await Promise.all([
      pendingNonce(),
      minedNonce(),
      chain.publicClient.request({ method: 'txpool_content' as never }).catch((e: Error) => e.message),
      db.query(`select nonce, state, at from chain_nonces order by nonce`).then((r) => r.rows),
    ]);
    const txs = await Promise.all(
      records.map((r) =>
        r.transactionHash
          ? chain.publicClient.getTransaction({ hash: r.transactionHash as Hex }).then(
              (t) => t.nonce,
              () => null,
            )
          : null,
      ),
    );
    diagnosis = JSON.stringify({ pending, mined, pool, rows, records: records.map((r, i) => ({ status: r.status, nonce: txs[i] })) }, (_, v) =>
      typeof v === 'bigint' ? String(v) : v,
    );
  }
  for (const r of records) expect(r.status, `${JSON.stringify(r)} ${diagnosis}`).toBe('completed');
  const hashes = records.map((r) => r.transactionHash as Hex);
  const receipts = await Promise.all(hashes.map((hash) => chain.publicClient.getTransactionReceipt({ hash })));
  for (const receipt of receipts) expect(receipt.status).toBe('success');
  const txs = await Promise.all(hashes.map((hash) => chain.publicClient.getTransaction({ hash })));
  for (const tx of txs) expect(tx.from.toLowerCase()).toBe(wallet.toLowerCase());
  return txs.map((t) => t.nonce).sort((a, b) => a - b);
}

describe('three gateway instances on one PostgreSQL database and one chain', () => {
  test('concurrent transfers from all three: no nonce collision, every transaction mined with consecutive nonces', async () => {
    const start = await pendingNonce();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => transfer(i)));
    for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(await minedNonces(results.map((r) => r.body))).toEqual(consecutive(start, 30));
    expect(await minedNonce()).toBe(start + 30);
    // Allocations the node has counted past are pruned as the instances re-read its count; none is left allocated.
    const { rows } = await db.query(`select state from chain_nonces where state = 'allocated'`);
    expect(rows).toEqual([]);
  });

  test('50 concurrent identical idempotent transfers spread over the three: exactly one broadcast', async () => {
    const recipient = randomAddress();
    const start = await minedNonce();
    const headers = { 'idempotency-key': `scale-out-${Date.now()}` };
    const body = { recipientAddress: recipient, amount: '0.002' };
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => transfer(i, body, headers)));
    for (const r of results) expect([202, 409], JSON.stringify(r.body)).toContain(r.status);
    const accepted = results.filter((r) => r.status === 202);
    expect(new Set(accepted.map((r) => r.body.executionId)).size).toBe(1);
    // The others were told the key is in flight (409 idempotency_in_progress, retryable).
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.code).toBe('idempotency_in_progress');
    // On the chain: one transaction from the wallet, one payment to the recipient.
    expect(await chain.publicClient.getBalance({ address: recipient })).toBe(parseEther('0.002'));
    expect(await minedNonce()).toBe(start + 1);
    // A retry on any instance replays the one execution.
    const retries = await Promise.all([0, 1, 2].map((i) => transfer(i, body, headers)));
    for (const r of retries) {
      expect(r.status).toBe(202);
      expect(r.body).toMatchObject({ executionId: accepted[0]!.body.executionId, status: 'completed', idempotentReplay: true });
    }
    expect(await minedNonce()).toBe(start + 1);
  });

  test('50 concurrent transfers over the daily cap spread over the three: the value sent stays within the cap', async () => {
    const capData = await fetchJson(`${cluster.instances[0]!.url}/api/analytics/spend-cap`, { key: cluster.ownerKey });
    const used = BigInt(capData.body.dailyUsedWei);
    // Three fit in what is left today (0.1 ETH stays for the tests after this one): 50 race for them.
    const amount = (CAP - used - parseEther('0.1')) / 3n;
    const fits = 3;
    expect((CAP - used) / amount).toBe(3n);
    const recipients = Array.from({ length: 50 }, () => randomAddress());
    const results = await Promise.all(recipients.map((recipientAddress, i) => transfer(i, { recipientAddress, amount: formatEther(amount) })));
    const sent = results.filter((r) => r.status === 202);
    const refused = results.filter((r) => r.status === 403);
    for (const r of refused) expect(r.body.code).toBe('daily_spending_cap_exceeded');
    expect(sent.length + refused.length).toBe(50);
    expect(sent).toHaveLength(fits);
    // On the chain: exactly what fitted under the cap arrived, nothing more.
    const balances = await Promise.all(recipients.map((address) => chain.publicClient.getBalance({ address })));
    const total = balances.reduce((sum, b) => sum + b, 0n);
    expect(total).toBe(amount * BigInt(fits));
    expect(used + total).toBeLessThanOrEqual(CAP);
    await minedNonces(sent.map((r) => r.body));
  });

  test('a nonce allocated by an instance that died before broadcasting: after the grace the sends queued behind it are mined with no further send', async () => {
    const start = await pendingNonce();
    // What an instance killed between allocating and broadcasting leaves behind.
    await db.query(`insert into chain_nonces (chain_id, address, nonce, state, at) values (31337, $1, $2, 'allocated', $3)`, [
      wallet.toLowerCase(),
      start,
      Date.now(),
    ]);
    // Two sends take the nonces after it; the node holds them behind the gap.
    const queued = Promise.all([transfer(0), transfer(1)]);
    await expect
      .poll(async () => (await db.query(`select 1 from chain_nonces where nonce > $1 and state = 'sent'`, [start])).rowCount, { timeout: 10_000 })
      .toBe(2);
    expect(await minedNonce()).toBe(start);
    // Nothing else is sent: past the grace, an instance whose transfer waits fills the abandoned nonce with a
    // transaction that moves nothing, and both transfers are mined and answered.
    const records = (await queued).map((r) => r.body);
    expect(await minedNonces(records)).toEqual(consecutive(start + 1, 2));
    const filler = await minedTransaction(chain.publicClient, wallet, start);
    expect(filler).toMatchObject({ to: wallet.toLowerCase(), value: 0n, input: '0x' });
    // Later transfers carry on from there.
    const later = await Promise.all([0, 1, 2].map((i) => transfer(i)));
    expect(await minedNonces(later.map((r) => r.body))).toEqual(consecutive(start + 3, 3));
  }, 60_000);
});

describe('the daily cap under overlapping transactions from two instances', () => {
  test('reservations that stay open a while before committing still never pass the cap together', async () => {
    // Two stores on the database, as two instances hold them; each reservation's transaction lingers 50 ms before committing.
    const stores: Store[] = [0, 1].map(() => openStore({ dataDir: '/nonexistent', databaseUrl: cluster.databaseUrl }).store);
    try {
      const config = loadConfig({});
      const { rows } = await db.query<{ id: string }>(`select id from organizations where slug = 'default'`);
      const organizationId = rows[0]!.id;
      const amount = config.spend.dailySolanaValueCapLamports / 3n;
      const attempts = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          stores[i % 2]!.transaction().execute(async (trx) => {
            await reserveSpend(trx, config, { organizationId, asset: 'solana-native', amount, source: 'direct', executionId: newId() });
            await sql`select pg_sleep(0.05)`.execute(trx);
          }),
        ),
      );
      expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(3);
      for (const a of attempts) if (a.status === 'rejected') expect((a.reason as { code?: string }).code).toBe('daily_spending_cap_exceeded');
      const { rows: reserved } = await db.query<{ amount: string }>(`select amount from spend_reservations where asset = 'solana-native'`);
      expect(reserved.reduce((sum, r) => sum + BigInt(r.amount), 0n)).toBeLessThanOrEqual(config.spend.dailySolanaValueCapLamports);
    } finally {
      await Promise.all(stores.map((s) => s.destroy()));
    }
  });
});

describe('payment replay across instances', () => {
  const microtip = (i: number) => `${cluster.instances[i]!.url}/api/mcp/workflows/microtip/call`;
  const usdcBalance = (address: Address) =>
    chain.publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: testUsdcAbi, functionName: 'balanceOf', args: [address] }) as Promise<bigint>;
  const paidCall = (i: number, signature: string) =>
    fetchJson(microtip(i), { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': signature }, body: '{}' });

  test('one signed x402 payment presented to all three at once settles once and runs once; each instance then replays it', async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    await chain.setBalance(testUsdcDeployer.address, '10');
    const minter = createWalletClient({ chain: chain.chain, transport: http(chain.url), account: testUsdcDeployer });
    const minted = await minter.writeContract({ address: TEST_USDC_ADDRESS, abi: testUsdcAbi, functionName: 'mint', args: [payer.address, 1_000_000n] });
    await chain.publicClient.waitForTransactionReceipt({ hash: minted });

    const unpaid = await fetch(microtip(0), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unpaid.status).toBe(402);
    const client = new x402Client().register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: TEST_USDC_ADDRESS }] });
    const signature = encodePaymentSignatureHeader(await client.createPaymentPayload(decodePaymentRequiredHeader(unpaid.headers.get('payment-required')!)));

    const first = await Promise.all([0, 1, 2].map((i) => paidCall(i, signature)));
    const ran = first.filter((r) => r.status === 200 && !r.body.paymentReplay);
    expect(ran, JSON.stringify(first.map((r) => [r.status, r.body]))).toHaveLength(1);
    for (const r of first.filter((r) => r !== ran[0])) {
      // Another instance holds the payment: it says so (retryable) or hands back the one execution.
      if (r.status === 409) expect(r.body.code).toBe('payment_in_progress');
      else expect(r.body).toMatchObject({ executionId: ran[0]!.body.executionId, paymentReplay: true });
    }
    // Paid once on the chain: the price of microtip (0.01 USDC), not three times.
    expect(await usdcBalance(payer.address)).toBe(1_000_000n - 10_000n);

    // Accepted by one instance, the same payment run on any other is the original execution, never a second run.
    for (const i of [0, 1, 2]) {
      const again = await paidCall(i, signature);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ executionId: ran[0]!.body.executionId, paymentReplay: true });
    }
    expect(await usdcBalance(payer.address)).toBe(1_000_000n - 10_000n);
    const { rows } = await db.query(`select execution_id from payments where payer ilike $1`, [payer.address]);
    expect(rows).toHaveLength(1);
  });
});

describe('an instance killed mid-send', () => {
  test('SIGKILL while it sends: after the grace the others carry on, every later transfer mined and nothing left queued', async () => {
    const victim = cluster.instances[2]!;
    const start = await pendingNonce();
    const inFlight = Array.from({ length: 10 }, () => transfer(2).catch(() => undefined));
    // Kill it once it holds a nonce it has not yet had answered by the node.
    await expect
      .poll(async () => (await db.query(`select 1 from chain_nonces where address = $1 and state = 'allocated'`, [wallet.toLowerCase()])).rowCount, {
        timeout: 10_000,
        interval: 5,
      })
      .toBeGreaterThan(0);
    await victim.kill();
    await Promise.all(inFlight);
    await new Promise((r) => setTimeout(r, NONCE_GRACE_MS + 500));
    const later = await Promise.all(Array.from({ length: 6 }, (_, i) => transfer(i % 2)));
    const nonces = await minedNonces(later.map((r) => r.body));
    expect(nonces[0]).toBeGreaterThanOrEqual(start);
    // No gap holds anything back: what the node has pending is all mined.
    expect(await pendingNonce()).toBe(await minedNonce());
  }, 60_000);
});
