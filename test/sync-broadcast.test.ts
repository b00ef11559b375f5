import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { type Address, type Hex, type PublicClient } from 'viem';
import { createNonceManager } from '../src/chains/nonces.ts';
import { signAndBroadcast, verifyTransaction } from '../src/chains/transactions.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { gatewayClient, startRpcProxy, type RpcProxy } from './helpers/rpc-proxy.ts';

/**
 * A node that mines on arrival answers each broadcast with its receipt (eth_sendRawTransactionSync), so a send
 * costs the node one call instead of a broadcast and several receipt reads; any other node is sent to the plain
 * way. The sends reach anvil through a proxy that counts the calls it forwards and, to stand in for an older
 * anvil or a real chain's node, answers the methods it is told to refuse as such a node does (JSON-RPC -32601).
 */

let chain: TestChain;
let proxy: RpcProxy;

beforeAll(async () => {
  chain = await startTestChain(31337);
  proxy = await startRpcProxy(chain.url);
});

afterAll(async () => {
  await proxy?.close();
  await chain?.stop();
});

beforeEach(async () => {
  proxy.calls.clear();
  proxy.refused.clear();
  proxy.forbidden.clear();
  proxy.tamper.clear();
  proxy.hold = undefined;
  await chain.testClient.setAutomine(true);
});

const count = (method: string) => proxy.count(method);

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !condition(); await new Promise((r) => setTimeout(r, 25))) {
    if (Date.now() > deadline) throw new Error('timed out');
  }
}
/** A new client each time: what it learnt about the node (src/chains/sync-broadcast.ts) is kept per client. */
const newClient = () => gatewayClient(chain.chain, proxy.url);

let nextAccount = 1;
/** A funded account no other test sends from (each test's nonces start from the chain). */
async function sender() {
  const account = chain.account(nextAccount++);
  await chain.setBalance(account.address, '100');
  return account;
}

const send = (
  client: PublicClient,
  account: Awaited<ReturnType<typeof sender>>,
  nonces = createNonceManager(),
  to: Address = chain.account(0).address,
  gas?: bigint,
) => signAndBroadcast({ client, account, nonces }, { to, value: 1n }, { replaceable: true, ...(gas ? { gas } : {}), onSigned: async () => void signed++ });
/** Sends signed so far (each signs, and stores its bytes, before its broadcast). */
let signed = 0;

describe('broadcasts answered with their receipt', () => {
  test('on a node that mines on arrival a send comes back with its own receipt: one sync broadcast, no receipt read', async () => {
    const client = newClient();
    const account = await sender();
    const { hash, receipt } = await send(client, account);
    expect(receipt).toMatchObject({ transactionHash: hash, status: 'success', from: account.address.toLowerCase() });
    expect(typeof receipt!.blockNumber).toBe('bigint');
    expect(count('eth_sendRawTransactionSync')).toBe(1);
    expect(count('eth_sendRawTransaction')).toBe(0);
    // The receipt it came with is the chain's: verifying the send reads nothing more.
    const verified = await verifyTransaction(client, hash, 5_000, receipt);
    expect(verified).toMatchObject({ hash, verified: true, receiptStatus: 'success', blockNumber: Number(receipt!.blockNumber) });
    expect(count('eth_getTransactionReceipt')).toBe(0);
    expect(await chain.publicClient.getTransactionReceipt({ hash })).toMatchObject({ blockHash: receipt!.blockHash, status: 'success' });
  });

  test('ten concurrent sends from one wallet each come back with their own receipt, nonces in order, without a receipt read', async () => {
    const client = newClient();
    const account = await sender();
    const nonces = createNonceManager();
    const sends = await Promise.all(Array.from({ length: 10 }, () => send(client, account, nonces)));
    expect(new Set(sends.map((s) => s.hash)).size).toBe(10);
    for (const { hash, receipt } of sends) expect(receipt).toMatchObject({ transactionHash: hash, status: 'success' });
    const mined = await Promise.all(sends.map(({ hash }) => chain.publicClient.getTransaction({ hash })));
    const used = mined.map((tx) => tx.nonce).sort((a, b) => a - b);
    expect(used).toEqual(used.map((_, i) => used[0]! + i));
    expect(count('eth_getTransactionReceipt')).toBe(0);
    expect(count('eth_sendRawTransaction')).toBe(0);
  });

  test('a sync answer naming another transaction is not taken as this send’s receipt: its receipt is read by hash', async () => {
    const client = newClient();
    const other = `0x${'ab'.repeat(32)}`;
    proxy.tamper.set('eth_sendRawTransactionSync', ({ result }) => ({ result: { ...(result as object), transactionHash: other } }));
    const { hash, receipt } = await send(client, await sender());
    expect(receipt).toBeUndefined();
    expect(await verifyTransaction(client, hash, 10_000)).toMatchObject({ hash, receiptStatus: 'success' });
    expect(count('eth_getTransactionReceipt')).toBeGreaterThan(0);
  });

  test('a sync broadcast the node answers with its confirmation timeout counts as sent, never as refused', async () => {
    const client = newClient();
    // The node took the transaction (and mines it) but answers as after its own wait ran out.
    proxy.tamper.set('eth_sendRawTransactionSync', () => ({ error: { code: -32603, message: 'Transaction confirmation timeout' } }));
    const { hash, receipt } = await send(client, await sender());
    expect(receipt).toBeUndefined();
    expect(await verifyTransaction(client, hash, 10_000)).toMatchObject({ hash, receiptStatus: 'success' });
  });

  test('a send mined as a revert comes back with its reverted receipt', async () => {
    const client = newClient();
    const reverter: Address = '0x00000000000000000000000000000000000c0de1';
    // PUSH1 0 PUSH1 0 REVERT: every call reverts.
    await chain.testClient.setCode({ address: reverter, bytecode: '0x60006000fd' });
    // A gas limit given: nothing is estimated first, so the revert is mined.
    const { hash, receipt } = await send(client, await sender(), undefined, reverter, 60_000n);
    expect(receipt).toMatchObject({ transactionHash: hash, status: 'reverted' });
    expect(await verifyTransaction(client, hash, 5_000, receipt)).toMatchObject({ verified: false, receiptStatus: 'reverted' });
  });
});

describe('nodes that do not mine on arrival', () => {
  test('with automine off a send goes out the plain way, and its receipt is waited for once a block comes', async () => {
    await chain.testClient.setAutomine(false);
    const client = newClient();
    const { hash, receipt } = await send(client, await sender());
    expect(receipt).toBeUndefined();
    expect(count('eth_sendRawTransactionSync')).toBe(0);
    expect(count('eth_sendRawTransaction')).toBe(1);
    const waited = verifyTransaction(client, hash, 10_000);
    await chain.testClient.mine({ blocks: 1 });
    expect(await waited).toMatchObject({ hash, receiptStatus: 'success' });
  });

  test('automine turned off after the node was asked: a sync broadcast the node holds unmined counts as sent, and both sends are mined when a block comes', async () => {
    const client = newClient();
    const account = await sender();
    const nonces = createNonceManager();
    await send(client, account, nonces);
    await chain.testClient.setAutomine(false);
    const first = await send(client, account, nonces);
    // Not answered in time, and the node has it: sent, with no receipt yet (the wallet's next send need not re-read its nonce).
    expect(first.receipt).toBeUndefined();
    expect(count('eth_sendRawTransactionSync')).toBe(2);
    expect(count('eth_getTransactionByHash')).toBe(1);
    const second = await send(client, account, nonces);
    expect(count('eth_getTransactionCount')).toBe(1);
    const waits = [first, second].map(({ hash }) => verifyTransaction(client, hash, 20_000));
    await chain.testClient.mine({ blocks: 1 });
    for (const wait of waits) expect((await wait).receiptStatus).toBe('success');
    const [a, b] = await Promise.all([chain.publicClient.getTransaction({ hash: first.hash }), chain.publicClient.getTransaction({ hash: second.hash })]);
    expect(b.nonce).toBe(a.nonce + 1);
    expect(b.blockNumber).toBe(a.blockNumber);
  });

  test('a sync broadcast held on its way to the node is waited for, not taken as sent: its answer decides', async () => {
    const client = newClient();
    const account = await sender();
    let release!: () => void;
    proxy.hold = new Promise((resolve) => (release = resolve));
    try {
      const sending = send(client, account);
      // Past the wait: the node is asked for the transaction, does not have it, and the send still waits.
      await until(() => count('eth_getTransactionByHash') === 1);
      release();
      const { hash, receipt } = await sending;
      expect(receipt).toMatchObject({ transactionHash: hash, status: 'success' });
    } finally {
      proxy.hold = undefined;
      release();
    }
  });

  test('a node without eth_sendRawTransactionSync (an older anvil) gets the same bytes the plain way, and is not asked again', async () => {
    proxy.refused.add('eth_sendRawTransactionSync');
    const client = newClient();
    const account = await sender();
    const nonces = createNonceManager();
    const first = await send(client, account, nonces);
    const second = await send(client, account, nonces);
    expect(first.receipt).toBeUndefined();
    expect(count('eth_sendRawTransactionSync')).toBe(1);
    expect(count('eth_sendRawTransaction')).toBe(2);
    for (const { hash } of [first, second]) expect((await verifyTransaction(client, hash, 20_000)).receiptStatus).toBe('success');
  });

  test('a batch of sync broadcasts to a node without the method goes again as one plain batch', async () => {
    const [first, second] = [newClient(), newClient()];
    const account = await sender();
    const nonces = createNonceManager();
    // Warm: the wallet's nonces are counted in the process, so the sends below sign ahead and go out as a group.
    await send(first, account, nonces);
    proxy.refused.add('eth_sendRawTransactionSync');
    const seen = proxy.broadcastRequests.length;
    let release!: () => void;
    proxy.hold = new Promise((resolve) => (release = resolve));
    try {
      const lead = send(first, account, nonces);
      await until(() => proxy.broadcastRequests.length > seen);
      // Three more, through a client that has not learnt the node lacks the method; they sign while the lead is held.
      const before = signed;
      const group = [1, 2, 3].map(() => send(second, account, nonces));
      await until(() => signed === before + 3);
      release();
      const sends = await Promise.all([lead, ...group]);
      // The lead: refused as sync, sent plainly; the group: one sync batch refused, then the same three as one plain batch.
      expect(proxy.broadcastRequests.slice(seen)).toEqual([1, 1, 3, 3]);
      for (const { hash } of sends) expect((await verifyTransaction(second, hash, 20_000)).receiptStatus).toBe('success');
    } finally {
      proxy.hold = undefined;
      release();
    }
  });

  test.each([
    ['answers JSON-RPC -32601', () => proxy.refused.add('anvil_getAutomine')],
    ['answers 403 with an HTML page', () => proxy.forbidden.add('anvil_getAutomine')],
  ])('a node that is not a devnet (its provider %s to anvil_getAutomine) is asked once, and sends go out the plain way', async (_, refuse) => {
    refuse();
    const client = newClient();
    const account = await sender();
    const nonces = createNonceManager();
    const hashes: Hex[] = [];
    for (let i = 0; i < 3; i++) {
      const { hash, receipt } = await send(client, account, nonces);
      expect(receipt).toBeUndefined();
      hashes.push(hash);
      // Past the second in which one answer stands for the next sends: still not asked again.
      await new Promise((resolve) => setTimeout(resolve, 600));
    }
    expect(count('anvil_getAutomine')).toBe(1);
    expect(count('eth_sendRawTransactionSync')).toBe(0);
    for (const hash of hashes) expect((await verifyTransaction(client, hash, 20_000)).receiptStatus).toBe('success');
  });
});
