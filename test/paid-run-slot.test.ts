import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { CATALOG_ORGANIZATION_SLUG } from '../src/catalog/sync.ts';
import { getListing } from '../src/catalog/listings.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { action, linear } from './helpers/web3.ts';
import { recordRunStatuses } from './helpers/store-faults.ts';

/**
 * A paid call's run takes a slot of its publisher's share like any run: with one free it is claimed as its payment
 * settles and starts at once; with the share held it waits, pending, for the slot, and the call still answers its
 * result. Real devnet, real x402 client.
 */

let chain: TestChain;
let gw: TestGateway;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  chain = await startTestChain(31337);
  target = await startHttpTarget();
  gw = await startTestGateway({
    env: {
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: chain.url,
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_ENGINE_CONCURRENCY: '2',
      FLOWGATE_ENGINE_CONCURRENCY_PER_ORG: '1',
    },
  });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await chain?.stop();
  target?.close();
});

async function payingFetch() {
  const account = privateKeyToAccount(generatePrivateKey());
  await gw.gateway.services.devnet!.fund(account.address, { usdc: '10' });
  const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
  client.setSpendControls({
    allowedAssets: [{ network: 'eip155:31337', asset: gw.gateway.services.devnet!.usdcAddress, maxAmountPerPayment: '1000000' }],
  });
  return wrapFetchWithPayment(fetch, client);
}

describe("a paid call's run and its publisher's slots", () => {
  it('is claimed as its payment settles with a free slot, and waits pending for the slot while the publisher holds its share, then answers its result', async () => {
    const { store } = gw.gateway.services;
    const listing = await getListing(store, 'microtip');
    const runsOfListing = () =>
      store.selectFrom('workflow_executions').select(['id', 'status', 'started_at']).where('workflow_id', '=', listing.workflowId).execute();
    const call = async () => {
      const res = await (
        await payingFetch()
      )(`${gw.url}/api/mcp/workflows/microtip/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      return { status: res.status, body: await res.json() };
    };

    const runs = await recordRunStatuses(store);
    // A free slot: the paid run is claimed as its payment settles and runs, never pending in between.
    const quick = await call();
    expect(quick.status).toBe(200);
    expect(quick.body.status).toBe('success');
    expect(await runs.statuses(quick.body.executionId)).toEqual(['awaiting_payment', 'running', 'success']);

    // The publisher's organization holds its one slot with a slow run of its own.
    const key = await gw.createKey({ org: CATALOG_ORGANIZATION_SLUG });
    const created = await fetchJson(`${gw.url}/api/workflows/create`, {
      key,
      method: 'POST',
      body: JSON.stringify({
        name: 'holds the slot',
        ...linear(action('wait', 'Wait', { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms=3000`, httpMethod: 'GET' })),
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const holding = await fetchJson(`${gw.url}/api/workflows/${created.body.id}/execute`, { key, method: 'POST', body: '{"input":{}}' });
    expect(holding.status).toBe(200);

    const before = new Set((await runsOfListing()).map((r) => r.id));
    const waiting = call();
    // The paid run is written, its payment settles, and it waits for the slot.
    let pending;
    for (let i = 0; i < 100 && !pending; i++) {
      pending = (await runsOfListing()).find((r) => !before.has(r.id) && r.status === 'pending');
      if (!pending) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(pending, 'the paid run waits for the slot as pending').toBeDefined();
    const answered = await waiting;
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ executionId: pending!.id, status: 'success' });
    expect(await runs.statuses(pending!.id)).toEqual(['awaiting_payment', 'pending', 'running', 'success']);
    const held = await fetchJson(`${gw.url}/api/workflows/executions/${holding.body.executionId}/wait?timeoutMs=10000`, { key });
    expect(held.body.status).toBe('success');
    // It started only once the slow run had ended.
    const ran = (await runsOfListing()).find((r) => r.id === pending!.id)!;
    expect(Date.parse(ran.started_at!)).toBeGreaterThanOrEqual(Date.parse(held.body.completedAt));
  }, 60_000);
});
