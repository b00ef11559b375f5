import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { keccak256, parseEther, type Address, type Hex } from 'viem';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { action, linear, randomAddress, runWorkflow } from './helpers/web3.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startRpcProxy, type RpcProxy } from './helpers/rpc-proxy.ts';

/**
 * Many transfers from one organization wallet at once (issue 18): nonces are
 * assigned in the process, bytes are signed and stored while earlier sends
 * broadcast, the sends signed meanwhile go out together in one request,
 * broadcasts never wait on another send's receipt (anvil mines on arrival, so
 * each broadcast's answer carries its own: src/chains/sync-broadcast.ts), and
 * a refused broadcast leaves no nonce gap. The gateway reaches anvil through a JSON-RPC proxy that counts the
 * calls it forwards and can hold broadcasts back.
 */

let chain: TestChain;
let gw: TestGateway;
let wallet: Address;
let proxy: RpcProxy;
const sharedNonces = process.env.FLOWGATE_TEST_DATABASE === 'postgres';

const transfer = (body: Record<string, unknown> = {}) =>
  fetchJson(`${gw.url}/api/execute/transfer`, {
    method: 'POST',
    key: gw.ownerKey,
    body: JSON.stringify({ chainId: 31337, recipientAddress: randomAddress(), amount: '0.001', ...body }),
  });

const pendingNonce = () => chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'pending' });
const minedNonce = () => chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'latest' });

async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The nonces of completed records' transactions, read back from the chain. */
async function nonces(records: { status: string; transactionHash?: string; receipts: { verified: boolean; receiptStatus?: string }[] }[]) {
  for (const r of records) {
    expect(r.status, JSON.stringify(r)).toBe('completed');
    expect(r.receipts[0]).toMatchObject({ verified: true, receiptStatus: 'success' });
  }
  const txs = await Promise.all(records.map((r) => chain.publicClient.getTransaction({ hash: r.transactionHash as Hex })));
  return txs.map((t) => t.nonce).sort((a, b) => a - b);
}

const consecutive = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

/**
 * anvil's automine can leave transactions that arrived behind a nonce gap unmined once the gap is filled,
 * until some other transaction arrives (foundry-rs/foundry#10122); a real chain's next block takes them.
 * While `work` runs a block is also mined every second, as on a chain, so such a straggler is mined rather
 * than timing out its transfer's receipt wait (a CI run saw two do so).
 */
async function withBlocks<T>(work: Promise<T>): Promise<T> {
  const timer = setInterval(() => void chain.testClient.mine({ blocks: 1 }).catch(() => {}), 1_000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/** Direct executions whose bytes were signed and stored for a nonce from `start` on (signing stores them before any broadcast). */
async function signedSince(start: number): Promise<number> {
  const rows = await gw.gateway.services.store
    .selectFrom('direct_executions')
    .select(['signed_transaction'])
    .where('signed_transaction', 'is not', null)
    .execute();
  const { parseTransaction } = await import('viem');
  return rows.filter((r) => (parseTransaction(r.signed_transaction as Hex).nonce ?? -1) >= start).length;
}

/**
 * 16 transfers at once, the first one's broadcast held at the node's door until all 16 are signed and
 * stored; all must mine with consecutive nonces. The number of broadcasts each request carried since.
 */
async function sixteenBehindAHeldBroadcast(): Promise<number[]> {
  const start = await pendingNonce();
  let release!: () => void;
  proxy.hold = new Promise((r) => (release = r));
  const seen = proxy.broadcastRequests.length;
  try {
    const pending = Array.from({ length: 16 }, () => transfer());
    await until('16 transfers are signed and stored', async () => (await signedSince(start)) === 16);
    release();
    const records = (await Promise.all(pending)).map((r) => r.body);
    expect(await nonces(records)).toEqual(consecutive(start, 16));
    return proxy.broadcastRequests.slice(seen);
  } finally {
    proxy.hold = undefined;
    release();
  }
}

/**
 * Every nonce from `start` to the wallet's mined count is mined: those not in `used` (the completed
 * transfers') by a zero-value transfer from the wallet to itself (a filled gap), and nothing is left pending.
 */
async function expectNoGapFrom(start: number, used: number[]) {
  await until('nothing of the wallet is left pending', async () => (await pendingNonce()) === (await minedNonce()));
  const mined = await minedNonce();
  expect(mined).toBeGreaterThanOrEqual(start + used.length);
  const block = await chain.publicClient.getBlockNumber({ cacheTime: 0 });
  const fills = [];
  for (let n = block; n > 0n && fills.length + used.length < mined - start; n--) {
    const { transactions } = await chain.publicClient.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of transactions) {
      if (tx.from.toLowerCase() === wallet.toLowerCase() && tx.nonce >= start && !used.includes(tx.nonce)) fills.push(tx);
    }
  }
  expect(fills).toHaveLength(mined - start - used.length);
  for (const fill of fills) expect({ to: fill.to?.toLowerCase(), value: fill.value }).toEqual({ to: wallet.toLowerCase(), value: 0n });
}

beforeAll(async () => {
  chain = await startTestChain(31337);
  proxy = await startRpcProxy(chain.url);
  const rpc = proxy.url;
  gw = await startTestGateway({
    env: {
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: rpc,
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_RECEIPT_TIMEOUT_MS: '15000',
      EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('100').toString(),
    },
  });
  const org = await gw.gateway.services.organizations.ensure('default');
  wallet = (await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as Address;
  await chain.setBalance(wallet, '100');
  // The wallet's first send reads its nonce from the node; the tests below start warm.
  expect((await transfer()).body.status).toBe('completed');
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await chain?.stop();
});

describe('16 concurrent transfers from one wallet', () => {
  test('all 16 complete with 16 consecutive nonces, assigned in the process (no pending-nonce read per send)', async () => {
    const start = await pendingNonce();
    const countReads = proxy.count('eth_getTransactionCount');
    const records = (await Promise.all(Array.from({ length: 16 }, () => transfer()))).map((r) => (expect(r.status).toBe(202), r.body));
    expect(await nonces(records)).toEqual(consecutive(start, 16));
    expect(await minedNonce()).toBe(start + 16);
    // The nonces came from the process, not from one eth_getTransactionCount per send under a wallet lock.
    expect(proxy.count('eth_getTransactionCount') - countReads).toBe(0);
    // Each record's stored bytes are the transaction that was mined.
    const rows = await gw.gateway.services.store
      .selectFrom('direct_executions')
      .select(['transaction_hash', 'signed_transaction'])
      .where(
        'id',
        'in',
        records.map((r) => r.executionId),
      )
      .execute();
    for (const row of rows) expect(keccak256(row.signed_transaction as Hex)).toBe(row.transaction_hash);
  });

  test('a transfer the node refuses among concurrent ones leaves no nonce gap: the 15 others mine, and any nonce left between them is filled by a zero-value transfer to the wallet itself', async () => {
    const start = await pendingNonce();
    // Blocks of 200,000 gas: a transfer with gasLimitMultiplier 10 (210,000 gas) passes estimation but the node refuses its bytes.
    await chain.testClient.request({ method: 'evm_setBlockGasLimit', params: ['0x30d40'] } as never);
    try {
      const results = await withBlocks(Promise.all(Array.from({ length: 16 }, (_, i) => transfer(i === 5 ? { gasLimitMultiplier: '10' } : {}))));
      const refused = results.filter((r) => r.body.status === 'failed');
      // Compared as their errors, so a run that sees more than the one refusal says what the others were.
      expect(refused.map((r) => r.body.error)).toEqual([expect.stringMatching(/rejected the transaction/)]);
      expect(refused[0]!.body.transactionHash).toBeUndefined();
      const completed = results.filter((r) => r.body.status !== 'failed').map((r) => r.body);
      const used = await nonces(completed);
      await expectNoGapFrom(start, used);
    } finally {
      await chain.testClient.request({ method: 'evm_setBlockGasLimit', params: ['0x1c9c380'] } as never);
    }
    // The next transfer uses the next nonce.
    const mined = await minedNonce();
    const next = await transfer();
    expect(await nonces([next.body])).toEqual([mined]);
  });

  // Instances sharing PostgreSQL allocate each nonce in the database at the send's turn and broadcast one at a time (test/shared-nonces.test.ts).
  test.skipIf(sharedNonces)(
    'sends signed while an earlier broadcast is answered go out together: one request carries all 15, and all mine with consecutive nonces',
    async () => {
      expect(await sixteenBehindAHeldBroadcast()).toEqual([1, 15]);
    },
  );

  test.skipIf(sharedNonces)(
    'a transfer refused inside a group whose later nonces were accepted has its nonce filled at once: nothing waits behind it',
    async () => {
      const start = await pendingNonce();
      let release!: () => void;
      proxy.hold = new Promise((r) => (release = r));
      await chain.testClient.request({ method: 'evm_setBlockGasLimit', params: ['0x30d40'] } as never);
      try {
        const pending = [transfer()];
        await until('the first broadcast is held', async () => (await signedSince(start)) === 1);
        // Six more, one after another so their turns follow in this order; the third is refused by the node.
        for (let i = 0; i < 6; i++) {
          pending.push(transfer(i === 2 ? { gasLimitMultiplier: '10' } : {}));
          await until(`transfer ${i + 2} is signed and stored`, async () => (await signedSince(start)) === i + 2);
        }
        release();
        const results = (await withBlocks(Promise.all(pending))).map((r) => r.body);
        expect(results.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'failed', 'completed', 'completed', 'completed']);
        // The node's own words for this entry of the batch, as a lone broadcast would report them.
        expect(results[3]!.error).toMatch(/rejected the transaction: .*tx\.gas_limit > env\.block\.gas_limit/s);
        // Nonce start + 3 was the refused transfer's: a zero-value transfer to the wallet itself took it.
        const used = await nonces(results.filter((r) => r.status === 'completed'));
        expect(used).toEqual([start, start + 1, start + 2, start + 4, start + 5, start + 6]);
        await expectNoGapFrom(start, used);
        expect(await minedNonce()).toBe(start + 7);
      } finally {
        proxy.hold = undefined;
        release();
        await chain.testClient.request({ method: 'evm_setBlockGasLimit', params: ['0x1c9c380'] } as never);
      }
    },
  );

  test("a nonce used behind the gateway's back (another process on the same wallet) is re-read and the transfer re-signed once", async () => {
    const start = await pendingNonce();
    // Another sender takes the nonce this process would use next.
    await chain.testClient.impersonateAccount({ address: wallet });
    try {
      const other = await chain.walletClient(0).sendTransaction({ account: wallet, chain: chain.chain, to: randomAddress(), value: 1n });
      expect((await chain.publicClient.getTransaction({ hash: other })).nonce).toBe(start);
    } finally {
      await chain.testClient.stopImpersonatingAccount({ address: wallet });
    }
    const results = await Promise.all(Array.from({ length: 4 }, () => transfer()));
    expect(await nonces(results.map((r) => r.body))).toEqual(consecutive(start + 1, 4));
  });

  test("workflow transfer steps share the wallet's nonces with concurrent direct transfers: all mine, consecutive", async () => {
    const start = await pendingNonce();
    const step = () =>
      linear(action('send', 'Send', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.001', recipientAddress: randomAddress() }));
    const [runs, direct] = await Promise.all([
      Promise.all(Array.from({ length: 3 }, () => runWorkflow(gw, step()))),
      Promise.all(Array.from({ length: 8 }, () => transfer())),
    ]);
    const hashes = runs.map((run) => {
      expect(run.execution.status, JSON.stringify(run.execution)).toBe('success');
      expect(run.execution.transactionHashes).toHaveLength(1);
      return run.execution.transactionHashes[0].hash as Hex;
    });
    const workflowNonces = await Promise.all(hashes.map(async (hash) => (await chain.publicClient.getTransaction({ hash })).nonce));
    const all = [...(await nonces(direct.map((r) => r.body))), ...workflowNonces].sort((a, b) => a - b);
    expect(all).toEqual(consecutive(start, 11));
  });

  test('on a chain that mines only when told, all 16 reach the mempool before any block; one block then completes them all', async () => {
    await chain.testClient.setAutomine(false);
    try {
      const start = await pendingNonce();
      const block = await chain.publicClient.getBlockNumber({ cacheTime: 0 });
      const pending = Array.from({ length: 16 }, () => transfer());
      // No request's receipt wait holds back another's broadcast.
      await until('16 transactions are pending in the node', async () => (await pendingNonce()) === start + 16);
      expect(await chain.publicClient.getBlockNumber({ cacheTime: 0 })).toBe(block);
      const pool = (await chain.testClient.request({ method: 'txpool_content' } as never)) as { pending: Record<string, Record<string, unknown>> };
      const ours = Object.entries(pool.pending).find(([from]) => from.toLowerCase() === wallet.toLowerCase())?.[1] ?? {};
      expect(Object.keys(ours)).toHaveLength(16);
      await chain.testClient.mine({ blocks: 1 });
      const records = (await Promise.all(pending)).map((r) => r.body);
      expect(await nonces(records)).toEqual(consecutive(start, 16));
      const receipts = await Promise.all(records.map((r) => chain.publicClient.getTransactionReceipt({ hash: r.transactionHash as Hex })));
      expect(new Set(receipts.map((r) => r.blockNumber))).toEqual(new Set([block + 1n]));
    } finally {
      await chain.testClient.setAutomine(true);
    }
  });

  // Last in the file: the gateway remembers that this node takes no batches.
  test.skipIf(sharedNonces)('a node that does not answer JSON-RPC batches gets a group one broadcast at a time, in nonce order: all 16 mine', async () => {
    proxy.refuseBatches = true;
    try {
      // The refused batch ran nothing; its 15 went out one by one.
      expect(await sixteenBehindAHeldBroadcast()).toEqual([1, 15, ...Array(15).fill(1)]);
      // And the next group goes one by one from the start.
      const after = proxy.broadcastRequests.length;
      await Promise.all(Array.from({ length: 4 }, () => transfer()));
      expect(proxy.broadcastRequests.slice(after).every((n) => n === 1)).toBe(true);
    } finally {
      proxy.refuseBatches = false;
    }
  });
});
