import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseTransaction, type Address, type Hex } from 'viem';
import { finishInterruptedExecutions } from '../src/execute/interrupted-sweep.ts';
import type { Store } from '../src/store/db.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, openTestStoreFor, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { killedMidway } from './helpers/instances.ts';
import { chainRpc, holdMining, pendingInPool, resumeMining } from './helpers/mining.ts';
import { startRpcProxy } from './helpers/rpc-proxy.ts';
import { closeTillFirst, deployContract, tillContract } from './helpers/solidity.ts';
import { until } from './helpers/until.ts';
import { randomAddress } from './helpers/web3.ts';
import { refuseSpendSettlements } from './helpers/store-faults.ts';

/**
 * A direct execution whose request never finished it (the gateway killed mid-send) is finished from the chain by
 * the next start's sweep, with or without an idempotency key: mined, it ends completed and its value counts as
 * spent; never signed, or its nonce used by another transaction, it ends failed and its value leaves the day's cap;
 * dropped by the node, its stored bytes are sent again (the same hash, never re-signed). A request slow enough to be
 * taken for one whose process died is ended before it signs, and sends nothing. Real anvil (its automine turned off
 * to hold a transaction), a real `flowgate serve` process killed with SIGKILL, a JSON-RPC proxy that stops answering.
 */

const MASTER_KEY = 'cd'.repeat(32);
const AMOUNT = parseEther('0.01');

let chain: TestChain;
let gw: TestGateway | undefined;
let ownerKey: string;
const dataDir = tempDir('flowgate-interrupted-');

const env = (rpcUrl: string): Record<string, string> => ({
  FLOWGATE_DEVNET: 'auto',
  FLOWGATE_RPC_URL_31337: rpcUrl,
  FLOWGATE_RATE_LIMITS: 'off',
  FLOWGATE_MASTER_KEY: MASTER_KEY,
  EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('5').toString(),
});

const transfer = (url: string, to: Address, idempotencyKey?: string) =>
  fetchJson(`${url}/api/execute/transfer`, {
    method: 'POST',
    key: ownerKey,
    headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
    body: JSON.stringify({ chainId: 31337, recipientAddress: to, amount: '0.01' }),
  });
const status = async (id: string) => (await fetchJson(`${gw!.url}/api/execute/${id}/status`, { key: ownerKey })).body;
const dailyUsed = async () => BigInt((await fetchJson(`${gw!.url}/api/analytics/spend-cap`, { key: ownerKey })).body.dailyUsedWei);
const reservationOf = async (store: Store, executionId: string) =>
  (await store.selectFrom('spend_reservations').select('status').where('execution_id', '=', executionId).executeTakeFirstOrThrow()).status;

/**
 * Starts a `flowgate serve` process on the data directory, sends a transfer through it, and kills it with SIGKILL once
 * `sent` says so. Returns the execution it left, as the database holds it, made older than any live request can be
 * (the time a restart takes after a crash, without waiting for it).
 */
async function killedMidTransfer(rpcUrl: string, to: Address, sent: () => Promise<boolean>, idempotencyKey?: string) {
  await gw?.close();
  gw = undefined;
  const request = await killedMidway(env(rpcUrl), dataDir, (url) => transfer(url, to, idempotencyKey).catch((error: unknown) => error), sent);
  expect(await request).toBeInstanceOf(Error);
  const store = await openTestStoreFor(dataDir);
  try {
    const row = await store.selectFrom('direct_executions').selectAll().where('to_address', '=', to).executeTakeFirstOrThrow();
    expect(row.status).toBe('pending');
    expect(await reservationOf(store, row.id)).toBe('reserved');
    const longAgo = new Date(Date.now() - 10 * 60_000).toISOString();
    await store.updateTable('direct_executions').set({ created_at: longAgo }).where('id', '=', row.id).execute();
    return row;
  } finally {
    await store.destroy();
  }
}

/** The gateway started again on the data directory, straight to anvil: its sweep runs at start. */
async function restart() {
  gw = await startTestGateway({ dataDir, env: env(chain.url) });
  ownerKey = gw.ownerKey;
}

beforeAll(async () => {
  chain = await startTestChain(31337);
  await restart();
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

describe('a gateway killed while its transfer waits to be mined', () => {
  it('finishes it from the chain at the next start: completed, spent, and the retry with its key replays it', async () => {
    const to = randomAddress();
    const usedBefore = await dailyUsed();
    let row;
    try {
      await holdMining(chain);
      row = await killedMidTransfer(chain.url, to, async () => (await pendingInPool(chain)) > 0, `killed-${to}`);
    } finally {
      await resumeMining(chain);
    }
    expect(row.signed_transaction).toMatch(/^0x/);
    await restart();
    const done = await until('the sweep to finish it', async () => ((await status(row.id)).status === 'completed' ? status(row.id) : undefined));
    expect(done).toMatchObject({ executionId: row.id, transactionHash: row.transaction_hash, pollIntervalHint: 0 });
    expect(done.receipts[0]).toMatchObject({ verified: true, receiptStatus: 'success' });
    expect(await chain.publicClient.getBalance({ address: to })).toBe(AMOUNT);
    expect(await reservationOf(gw!.gateway.services.store, row.id)).toBe('spent');
    expect((await dailyUsed()) - usedBefore).toBe(AMOUNT);

    const nonce = await chain.publicClient.getTransactionCount({ address: row.from_address as Address });
    const retry = await transfer(gw!.url, to, `killed-${to}`);
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ executionId: row.id, status: 'completed', idempotentReplay: true });
    expect(await chain.publicClient.getTransactionCount({ address: row.from_address as Address })).toBe(nonce);
    expect(await chain.publicClient.getBalance({ address: to })).toBe(AMOUNT);
  }, 120_000);

  it('sends its stored bytes again when the node dropped them, without a key, and the status read finishes it', async () => {
    const to = randomAddress();
    let row;
    try {
      await holdMining(chain);
      row = await killedMidTransfer(chain.url, to, async () => (await pendingInPool(chain)) > 0);
      await chainRpc(chain, 'anvil_dropAllTransactions');
    } finally {
      await resumeMining(chain);
    }
    expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
    await restart();
    const done = await until('the sweep to send it again', async () => ((await status(row.id)).status === 'completed' ? status(row.id) : undefined));
    // The same signed bytes: the hash the record held before the crash is the one mined.
    expect(done).toMatchObject({ transactionHash: row.transaction_hash });
    expect(await chain.publicClient.getBalance({ address: to })).toBe(AMOUNT);
    expect(await reservationOf(gw!.gateway.services.store, row.id)).toBe('spent');
  }, 120_000);

  it('ends it failed when its nonce was used by another transaction, and takes its value off the day', async () => {
    const to = randomAddress();
    const usedBefore = await dailyUsed();
    let row;
    try {
      await holdMining(chain);
      row = await killedMidTransfer(chain.url, to, async () => (await pendingInPool(chain)) > 0, `replaced-${to}`);
      // The node forgets it, and the wallet's next transaction (sent by hand here) takes its nonce.
      await chainRpc(chain, 'anvil_dropAllTransactions');
      const from = row.from_address as Address;
      await chainRpc(chain, 'anvil_impersonateAccount', [from]);
      await chainRpc(chain, 'eth_sendTransaction', [
        { from, to: from, value: '0x0', nonce: `0x${parseTransaction(row.signed_transaction as Hex).nonce!.toString(16)}` },
      ]);
      await chainRpc(chain, 'anvil_stopImpersonatingAccount', [from]);
    } finally {
      await resumeMining(chain);
    }
    await restart();
    const done = await until('the sweep to end it', async () => ((await status(row.id)).status === 'failed' ? status(row.id) : undefined));
    expect(done.receipts[0]).toMatchObject({ hash: row.transaction_hash, verified: false, receiptStatus: 'not_found' });
    expect(done.error).toMatch(/never mined: nonce \d+ of 0x[0-9a-fA-F]{40} was used by another transaction/);
    expect(done.transactionHash).toBeUndefined();
    expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
    expect(await reservationOf(gw!.gateway.services.store, row.id)).toBe('released');
    expect(await dailyUsed()).toBe(usedBefore);
    // Nothing moved: the key is free again, and the same request sends afresh.
    const again = await transfer(gw!.url, to, `replaced-${to}`);
    expect(again.body).toMatchObject({ status: 'completed' });
    expect(again.body.idempotentReplay).toBeUndefined();
    expect(again.body.executionId).not.toBe(row.id);
    expect(await chain.publicClient.getBalance({ address: to })).toBe(AMOUNT);
  }, 120_000);
});

describe('a gateway killed before its transfer was signed', () => {
  it('ends it failed, nothing broadcast, its value off the day', async () => {
    const proxy = await startRpcProxy(chain.url);
    const to = randomAddress();
    const usedBefore = await dailyUsed();
    let row;
    try {
      // The node stops answering the gas estimate: the request waits there, before anything is signed.
      proxy.holdMethods.add('eth_estimateGas');
      proxy.hold = new Promise(() => {});
      row = await killedMidTransfer(proxy.url, to, async () => proxy.count('eth_estimateGas') > 0);
    } finally {
      await proxy.close();
    }
    expect(row.signed_transaction).toBeNull();
    expect(proxy.broadcasts()).toBe(0);
    await restart();
    const done = await until('the sweep to end it', async () => ((await status(row.id)).status === 'failed' ? status(row.id) : undefined));
    expect(done).toMatchObject({ receipts: [], error: expect.stringMatching(/stopped before this transaction was signed; nothing was broadcast/) });
    expect(await reservationOf(gw!.gateway.services.store, row.id)).toBe('released');
    expect(await dailyUsed()).toBe(usedBefore);
    expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
  }, 120_000);
});

describe('a request slower than any live request can be', () => {
  it('is ended by the sweep before it signs, and sends nothing once the node answers', async () => {
    const proxy = await startRpcProxy(chain.url);
    await gw?.close();
    gw = await startTestGateway({ dataDir, env: env(proxy.url) });
    ownerKey = gw.ownerKey;
    const sweep = finishInterruptedExecutions(gw.gateway.services, 200);
    try {
      const to = randomAddress();
      let answer: () => void = () => {};
      proxy.holdMethods.add('eth_estimateGas');
      proxy.hold = new Promise<void>((resolve) => (answer = resolve));
      const request = transfer(gw.url, to);
      await until('the gas estimate asked', async () => proxy.count('eth_estimateGas') > 0);
      const { store } = gw.gateway.services;
      const row = await store.selectFrom('direct_executions').selectAll().where('to_address', '=', to).executeTakeFirstOrThrow();
      // As if it had waited there for ten minutes: the sweep takes it for a request whose process died.
      await store
        .updateTable('direct_executions')
        .set({ created_at: new Date(Date.now() - 10 * 60_000).toISOString() })
        .where('id', '=', row.id)
        .execute();
      await until('the sweep to end it', async () => ((await status(row.id)).status === 'failed' ? true : undefined));
      answer();
      const res = await request;
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body).toMatchObject({ code: 'rpc_unavailable', executionId: row.id });
      expect(res.body.error).toMatch(/nothing was signed or sent/);
      expect(proxy.broadcasts()).toBe(0);
      expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
      expect(await status(row.id)).toMatchObject({ status: 'failed', receipts: [] });
    } finally {
      await sweep.close();
      await gw.close();
      await proxy.close();
      await restart();
    }
  }, 120_000);
});

describe('an unconfirmed execution settled by a status read', () => {
  it('takes a reverted payment off the day, where the read used to leave it counted', async () => {
    const till = tillContract();
    const address = await deployContract(chain, till);
    const proxy = await startRpcProxy(chain.url);
    await gw?.close();
    gw = await startTestGateway({ dataDir, env: env(proxy.url) });
    ownerKey = gw.ownerKey;
    try {
      const usedBefore = await dailyUsed();
      // The node answers every receipt read with an error: the request cannot tell what happened, and answers unconfirmed.
      proxy.tamper.set('eth_getTransactionReceipt', () => ({ error: { code: -32603, message: 'internal error' } }));
      await holdMining(chain);
      let executionId: string;
      try {
        const sent = await fetchJson(`${gw.url}/api/execute/contract-call`, {
          method: 'POST',
          key: ownerKey,
          body: JSON.stringify({ chainId: 31337, contractAddress: address, functionName: 'pay', abi: JSON.stringify(till.abi), value: '0.01' }),
        });
        expect(sent.status, JSON.stringify(sent.body)).toBe(202);
        expect(sent.body.status).toBe('unconfirmed');
        executionId = sent.body.executionId;
        expect((await dailyUsed()) - usedBefore).toBe(AMOUNT);
        // `close`, with a higher tip, is ordered first in the block: `pay` reverts at inclusion.
        await closeTillFirst(chain, address);
      } finally {
        await resumeMining(chain);
      }
      proxy.tamper.clear();
      // The outcome and the reservation land together or not at all: with the reservation's write refused, the read
      // answers the record as stored (not failed with its value still counted, nor an error).
      const allowSettlements = await refuseSpendSettlements(gw.gateway.services.store);
      try {
        const refused = await fetchJson(`${gw.url}/api/execute/${executionId}/status`, { key: ownerKey });
        expect(refused.status).toBe(200);
        expect(refused.body).toMatchObject({ status: 'unconfirmed' });
        expect(await reservationOf(gw.gateway.services.store, executionId)).toBe('reserved');
      } finally {
        await allowSettlements();
      }
      const read = await status(executionId);
      expect(read).toMatchObject({ status: 'failed', pollIntervalHint: 0 });
      expect(read.receipts[0]).toMatchObject({ verified: false, receiptStatus: 'reverted' });
      expect(await reservationOf(gw.gateway.services.store, executionId)).toBe('released');
      expect(await dailyUsed()).toBe(usedBefore);
    } finally {
      await gw.close();
      await proxy.close();
      await restart();
    }
  }, 120_000);
});
