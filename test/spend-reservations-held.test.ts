import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address, type Hex } from 'viem';
import { settleStaleReservations } from '../src/onchain/stale-reservations.ts';
import type { Store } from '../src/store/db.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, openTestStoreFor, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { killedMidway } from './helpers/instances.ts';
import { chainRpc, holdMining, pendingInPool } from './helpers/mining.ts';
import { startRpcProxy } from './helpers/rpc-proxy.ts';
import { closeTillFirst, deployContract, tillContract } from './helpers/solidity.ts';
import { until } from './helpers/until.ts';
import { randomAddress } from './helpers/web3.ts';

/**
 * A workflow step's spend reservation its sender never settled counts against the day's cap until something settles
 * it. A gateway killed mid-step (before signing, or with its transfer in the pool) left it held for the rest of the
 * UTC day, whatever happened on chain; now a sweep releases it when nothing was signed or the transaction reverted.
 * A step slower than any live send finds its reservation released before it broadcasts, and sends nothing. Real anvil
 * (automine off to hold a transfer), a real `flowgate serve` process killed with SIGKILL, a JSON-RPC proxy that stops
 * answering the gas estimate.
 */

const MASTER_KEY = 'ef'.repeat(32);
const AMOUNT = parseEther('0.01');

let chain: TestChain;
let gw: TestGateway | undefined;
let ownerKey: string;
const dataDir = tempDir('flowgate-held-');

const env = (rpcUrl: string): Record<string, string> => ({
  FLOWGATE_DEVNET: 'auto',
  FLOWGATE_RPC_URL_31337: rpcUrl,
  FLOWGATE_RATE_LIMITS: 'off',
  FLOWGATE_MASTER_KEY: MASTER_KEY,
  // Short leases: a killed instance's run is reaped within seconds of the next start.
  FLOWGATE_ENGINE_LEASE_MS: '2000',
  EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('5').toString(),
});

const dailyUsed = async () => BigInt((await fetchJson(`${gw!.url}/api/analytics/spend-cap`, { key: ownerKey })).body.dailyUsedWei);
const reservationOf = (store: Store, executionId: string) =>
  store.selectFrom('spend_reservations').selectAll().where('execution_id', '=', executionId).executeTakeFirst();

/** A workflow that sends 0.01 ETH to `to`, started on `url`; resolves with its execution id. */
async function startTransferRun(url: string, to: Address): Promise<string> {
  const created = await fetchJson(`${url}/api/workflows/create`, {
    method: 'POST',
    key: ownerKey,
    body: JSON.stringify({
      name: `Pay ${to}`,
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        {
          id: 'pay',
          type: 'action',
          data: { label: 'Pay', config: { actionType: 'web3/transfer-funds', network: '31337', amount: '0.01', recipientAddress: to } },
        },
      ],
      edges: [{ id: 'e1', source: 't', target: 'pay' }],
    }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const started = await fetchJson(`${url}/api/workflows/${created.body.id}/execute`, { method: 'POST', key: ownerKey, body: '{}' });
  expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
  return started.body.executionId;
}

/**
 * Runs a transfer workflow on a `flowgate serve` process on the data directory and kills it with SIGKILL once `sent`
 * says so; returns the run's id, its reservation made older than any live send can be (the time a restart takes after
 * a crash, without waiting for it).
 */
async function killedMidStep(rpcUrl: string, to: Address, sent: () => Promise<boolean>, meanwhile?: () => Promise<void>) {
  await gw?.close();
  gw = undefined;
  const started = await killedMidway(env(rpcUrl), dataDir, (url) => startTransferRun(url, to), sent);
  const executionId = await started;
  await meanwhile?.();
  const store = await openTestStoreFor(dataDir);
  try {
    const held = await reservationOf(store, executionId);
    expect(held).toMatchObject({ status: 'reserved', amount: AMOUNT.toString() });
    const longAgo = new Date(Date.now() - 10 * 60_000).toISOString();
    await store.updateTable('spend_reservations').set({ created_at: longAgo }).where('id', '=', held!.id).execute();
    return { executionId, held: held! };
  } finally {
    await store.destroy();
  }
}

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

describe("a workflow step's reservation left held by a killed gateway", () => {
  it('is released when nothing was signed', async () => {
    const proxy = await startRpcProxy(chain.url);
    const to = randomAddress();
    const usedBefore = await dailyUsed();
    let killed;
    try {
      // The node stops answering the gas estimate: the step waits there, before anything is signed.
      proxy.holdMethods.add('eth_estimateGas');
      proxy.hold = new Promise(() => {});
      killed = await killedMidStep(proxy.url, to, async () => proxy.count('eth_estimateGas') > 0);
    } finally {
      await proxy.close();
    }
    expect(killed.held.transaction_hash).toBeNull();
    await restart();
    await until('the reservation released', async () => (await reservationOf(gw!.gateway.services.store, killed.executionId))?.status === 'released');
    expect(await dailyUsed()).toBe(usedBefore);
    expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
  }, 120_000);

  it('is released when its transfer reverted at inclusion, and the run is reaped with the revert on record', async () => {
    const address = await deployContract(chain, tillContract());
    const usedBefore = await dailyUsed();
    let killed;
    await holdMining(chain);
    try {
      killed = await killedMidStep(
        chain.url,
        address,
        async () => (await pendingInPool(chain)) > 0,
        async () => {
          // `close`, with a higher tip, is mined first: the transfer reverts at inclusion.
          await closeTillFirst(chain, address);
          await chainRpc(chain, 'evm_mine');
        },
      );
    } finally {
      await chainRpc(chain, 'evm_setAutomine', [true]);
    }
    expect(killed.held.transaction_hash).toMatch(/^0x[0-9a-f]{64}$/);
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: killed.held.transaction_hash as Hex });
    expect(receipt.status).toBe('reverted');
    await restart();
    await until('the reservation released', async () => (await reservationOf(gw!.gateway.services.store, killed.executionId))?.status === 'released');
    expect(await dailyUsed()).toBe(usedBefore);
    const run = await fetchJson(`${gw!.url}/api/workflows/executions/${killed.executionId}/wait?timeoutMs=30000`, { key: ownerKey });
    expect(run.body).toMatchObject({ status: 'system_error', completed: true });
    expect(run.body.transactionHashes).toEqual([expect.objectContaining({ hash: killed.held.transaction_hash, nodeId: 'pay', receiptStatus: 'reverted' })]);
  }, 120_000);
});

describe('a workflow step slower than any live send', () => {
  it('finds its reservation released before it broadcasts, and sends nothing', async () => {
    const proxy = await startRpcProxy(chain.url);
    await gw?.close();
    gw = await startTestGateway({ dataDir, env: env(proxy.url) });
    ownerKey = gw.ownerKey;
    const sweep = settleStaleReservations(gw.gateway.services, 200);
    try {
      const to = randomAddress();
      const usedBefore = await dailyUsed();
      let answer: () => void = () => {};
      proxy.holdMethods.add('eth_estimateGas');
      proxy.hold = new Promise<void>((resolve) => (answer = resolve));
      const executionId = await startTransferRun(gw.url, to);
      await until('the gas estimate asked', async () => proxy.count('eth_estimateGas') > 0);
      const { store } = gw.gateway.services;
      const held = await until('the reservation', () => reservationOf(store, executionId));
      // As if the step had waited there for ten minutes: the sweep takes its sender for dead.
      await store
        .updateTable('spend_reservations')
        .set({ created_at: new Date(Date.now() - 10 * 60_000).toISOString() })
        .where('id', '=', held.id)
        .execute();
      await until('the reservation released', async () => (await reservationOf(store, executionId))?.status === 'released');
      answer();
      const run = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/wait?timeoutMs=30000`, { key: ownerKey });
      expect(run.body, JSON.stringify(run.body)).toMatchObject({ status: 'error', completed: true });
      expect(run.body.error).toMatch(/nothing was signed or sent/);
      expect(proxy.broadcasts()).toBe(0);
      expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
      expect(await dailyUsed()).toBe(usedBefore);
    } finally {
      await sweep.close();
      await gw.close();
      await proxy.close();
      await restart();
    }
  }, 120_000);
});
