import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { waitForReceipt } from '../src/chains/receipt-watcher.ts';
import type { TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { gatewayClient, startProxiedChain, startRpcProxy, type RpcProxy } from './helpers/rpc-proxy.ts';
import { randomAddress } from './helpers/web3.ts';

/**
 * anvil's pool race leaves a transaction queued for good although its nonce is its sender's next
 * (src/chains/stuck-pool.ts). The race itself is timing; its end state is made here on purpose: a transaction
 * queued behind the nonce before it, and then the sender's nonce moved up to it with anvil_setNonce, so the pool
 * never learns that its wait is over. A receipt wait on anvil heals that state with the same bytes (the hash a
 * record holds is the one mined), leaves a real gap alone, and never asks a node that is not anvil for its pool.
 */

let chain: TestChain, proxy: RpcProxy, client: PublicClient, stop: (() => Promise<void>) | undefined;

beforeAll(async () => ({ chain, proxy, client, stop } = await startProxiedChain()));
afterAll(() => stop?.());

const send = async (account: PrivateKeyAccount, nonce: number): Promise<Hex> =>
  chain.publicClient.sendRawTransaction({
    serializedTransaction: await account.signTransaction({
      type: 'eip1559',
      chainId: 31337,
      nonce,
      to: randomAddress(),
      value: 1n,
      gas: 21_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
    }),
  });

const setNonce = (address: Address, nonce: number) => chain.testClient.setNonce({ address, nonce });

/** The nonces of `address` the node holds queued (waiting on an earlier one). */
async function queued(address: Address): Promise<number[]> {
  const content = (await chain.publicClient.request({ method: 'txpool_content' } as never)) as { queued: Record<string, Record<string, unknown>> };
  return Object.keys(content.queued[address.toLowerCase()] ?? {})
    .map(Number)
    .sort((a, b) => a - b);
}

async function fundedAccount() {
  const account = privateKeyToAccount(generatePrivateKey());
  await chain.setBalance(account.address, '1');
  return account;
}

describe('a transaction anvil holds queued although it is next', () => {
  test('the receipt wait heals it: it and the one behind it are mined with the same hashes', async () => {
    const account = await fundedAccount();
    const first = await send(account, 1);
    const second = await send(account, 2);
    await setNonce(account.address, 1);
    // The stuck state: mining does not move it.
    await chain.testClient.mine({ blocks: 2 });
    expect(await queued(account.address)).toEqual([1, 2]);

    const receipts = await Promise.all([waitForReceipt(client, first, 30_000), waitForReceipt(client, second, 30_000)]);
    expect(receipts.map((r) => [r.transactionHash, r.status])).toEqual([
      [first, 'success'],
      [second, 'success'],
    ]);
    expect(await chain.publicClient.getTransactionCount({ address: account.address })).toBe(3);
    expect(proxy.count('anvil_removePoolTransactions')).toBe(1);
  });

  test('a real gap (nothing sent at the next nonce) is left to its sender: the pool keeps what waits behind it', async () => {
    const account = await fundedAccount();
    const waiting = await send(account, 2);
    const removals = proxy.count('anvil_removePoolTransactions');
    const looks = proxy.count('txpool_content');
    await expect(waitForReceipt(client, waiting, 5_000)).rejects.toThrow(/Timed out/i);
    // It looked, and took nothing out.
    expect(proxy.count('txpool_content')).toBeGreaterThan(looks);
    expect(proxy.count('anvil_removePoolTransactions')).toBe(removals);
    expect(await queued(account.address)).toEqual([2]);
    // Its sender fills the gap: then it is mined as sent.
    await send(account, 0);
    await send(account, 1);
    expect((await waitForReceipt(client, waiting, 10_000)).transactionHash).toBe(waiting);
  });
});

describe('a node that is not anvil', () => {
  let other: RpcProxy;
  afterAll(() => other?.close());

  test('is never asked for its pool, and the wait ends at its timeout', async () => {
    other = await startRpcProxy(chain.url);
    other.refused.add('anvil_getAutomine');
    const plain = gatewayClient(chain.chain, other.url);
    const account = await fundedAccount();
    const stuck = await send(account, 1);
    await setNonce(account.address, 1);
    await expect(waitForReceipt(plain, stuck, 5_000)).rejects.toThrow(/Timed out/i);
    expect(other.count('anvil_getAutomine')).toBe(1);
    expect(other.count('txpool_content')).toBe(0);
    expect(await queued(account.address)).toEqual([1]);
  });
});

describe('a direct transfer through the gateway', () => {
  let gw: TestGateway;
  afterAll(() => gw?.close());

  test('whose transaction the devnet holds stuck is answered completed, with the hash that was mined', async () => {
    gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RATE_LIMITS: 'off' } });
    const org = await gw.gateway.services.organizations.ensure('default');
    const wallet = (await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as Address;
    await chain.setBalance(wallet, '10');
    const transfer = () =>
      fetchJson(`${gw.url}/api/execute/transfer`, {
        method: 'POST',
        key: gw.ownerKey,
        body: JSON.stringify({ chainId: 31337, recipientAddress: randomAddress(), amount: '0.001' }),
      });
    const before = await transfer();
    expect(before.body.status).toBe('completed');
    // The node forgets the mined one's nonce: the gateway's next send (nonce n + 1) queues behind n, and then the
    // node's nonce moves to n + 1, so the queued one is next and never promoted.
    const n = (await chain.publicClient.getTransaction({ hash: before.body.transactionHash })).nonce;
    await setNonce(wallet, n);
    const pending = transfer();
    await expect.poll(() => queued(wallet), { timeout: 10_000 }).toEqual([n + 1]);
    await setNonce(wallet, n + 1);

    const answer = await pending;
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.body.status, JSON.stringify(answer.body)).toBe('completed');
    const tx = await chain.publicClient.getTransaction({ hash: answer.body.transactionHash });
    expect(tx).toMatchObject({ from: wallet.toLowerCase(), nonce: n + 1 });
    expect(tx.blockNumber).not.toBeNull();
    expect(await queued(wallet)).toEqual([]);
  }, 60_000);
});
