import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { erc20Abi, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { getListing } from '../src/catalog/listings.ts';
import { createLocalFacilitator } from '../src/payments/local-facilitator.ts';
import { prepareGatedRun } from '../src/engine/gated-runs.ts';
import { getWorkflow } from '../src/engine/workflows.ts';
import type { Store } from '../src/store/db.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { openTestStoreFor, startTestGateway, tempDir, testDatabaseEnv, type TestGateway } from './helpers/gateway.ts';
import { spawnGateway } from './helpers/instances.ts';
import { chainRpc, holdMining, pendingInPool, resumeMining } from './helpers/mining.ts';
import { until } from './helpers/until.ts';
import { devnetMppx } from './helpers/mpp-payer.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * A paid call whose settlement is sent but not mined when the call stops waiting (FLOWGATE_PAYMENT_CONFIRMATION_MS),
 * or whose gateway dies mid-settlement, is neither failed nor run unpaid: the payment is resolved from the chain.
 * Mined later: the run starts and its result is had from resultUrl. Never mined and past the authorization's
 * validBefore: the run ends as an error and nothing was charged. Real anvil (its automine turned off to hold the
 * settlement), real x402 and MPP clients, and a real `flowgate serve` process killed with SIGKILL.
 */

const MASTER_KEY = 'ab'.repeat(32);
const PRICE_UNITS = 10_000n; // microtip: 0.01 test USDC

let chain: TestChain;
let gw: TestGateway;
const dataDir = tempDir('flowgate-pending-');

const baseEnv = (rpcUrl: string): Record<string, string> => ({
  FLOWGATE_DEVNET: 'auto',
  FLOWGATE_RPC_URL_31337: rpcUrl,
  FLOWGATE_RATE_LIMITS: 'off',
  FLOWGATE_MASTER_KEY: MASTER_KEY,
});

const usdc = () => gw.gateway.services.devnet!.usdcAddress as Address;
const balanceOf = (owner: Address) => chain.publicClient.readContract({ address: usdc(), abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
const payee = async () =>
  (await gw.gateway.services.organizations.wallet((await getListing(gw.gateway.services.store, 'microtip')).organizationId))!.walletAddress as Address;
const paymentOf = (store: Store, executionId: string) => store.selectFrom('payments').selectAll().where('execution_id', '=', executionId).executeTakeFirst();

async function funded(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await gw.gateway.services.devnet!.fund(account.address, { usdc: '1' });
  return account;
}

/** An x402 paying fetch that also keeps the PAYMENT-SIGNATURE it sent (to present the same payment again). */
function x402Fetch(account: PrivateKeyAccount) {
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const signature = new Headers(input instanceof Request ? input.headers : init?.headers).get('payment-signature');
    if (signature) sent.push(signature);
    return fetch(input, init);
  };
  const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
  client.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: usdc(), maxAmountPerPayment: '1000000' }] });
  return { pay: wrapFetchWithPayment(recording, client), sent };
}

const callUrl = () => `${gw.url}/api/mcp/workflows/microtip/call`;
const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ dataDir, env: { ...baseEnv(chain.url), FLOWGATE_PAYMENT_CONFIRMATION_MS: '1500' } });
  // One paid call first: the facilitator's gas estimate and the token's details are read with mining on.
  const res = await x402Fetch(await funded()).pay(callUrl(), post);
  expect(res.status).toBe(200);
}, 90_000);
afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

describe('a paid call whose settlement is not mined in time', () => {
  it('answers awaiting_payment, runs once the chain shows the payment, and gives the same payment its run again', async () => {
    const account = await funded();
    const { pay, sent } = x402Fetch(account);
    const payeeBefore = await balanceOf(await payee());
    await holdMining(chain);
    let executionId: string;
    try {
      const res = await pay(callUrl(), post);
      const body = (await res.json()) as { executionId: string; status: string; resultUrl: string; hint: string };
      expect(res.status).toBe(200);
      expect(res.headers.get('payment-response')).toBeNull();
      expect(body).toMatchObject({ status: 'awaiting_payment', resultUrl: `${gw.url}/api/mcp/workflows/microtip/calls/${body.executionId}` });
      expect(body.hint).toMatch(/not mined yet.*do not pay again/);
      // One settlement sent: x402 asks the facilitator once more after its `settlement_pending`, which sends nothing again.
      expect(await pendingInPool(chain)).toBe(1);
      executionId = body.executionId;
      const payment = await paymentOf(gw.gateway.services.store, executionId);
      expect(payment).toMatchObject({ status: 'settling', transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      expect(body.hint).toContain(payment!.transaction_hash!);
      // The run waits, and nothing moved yet.
      const run = await gw.gateway.services.store.selectFrom('workflow_executions').select('status').where('id', '=', executionId).executeTakeFirstOrThrow();
      expect(run.status).toBe('awaiting_payment');
      expect(await balanceOf(await payee())).toBe(payeeBefore);

      // The same signed payment again, still unmined: the same run, no second settlement sent.
      const pooled = await pendingInPool(chain);
      const again = await fetch(callUrl(), { ...post, headers: { ...post.headers, 'payment-signature': sent[0]! } });
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({ executionId, status: 'awaiting_payment' });
      expect(await pendingInPool(chain)).toBe(pooled);
    } finally {
      await resumeMining(chain);
    }

    const result = await fetch(`${gw.url}/api/mcp/workflows/microtip/calls/${executionId}?timeoutMs=30000`);
    expect(result.status).toBe(200);
    expect(await result.json()).toMatchObject({ executionId, status: 'success', output: { result: { thanks: true } } });
    expect(await paymentOf(gw.gateway.services.store, executionId)).toMatchObject({ status: 'settled', receipt: expect.stringContaining('"transaction"') });
    expect(await balanceOf(await payee())).toBe(payeeBefore + PRICE_UNITS);

    // Presented again once settled: the original answer with its receipt, nothing charged twice.
    const replayed = await fetch(callUrl(), { ...post, headers: { ...post.headers, 'payment-signature': sent[0]! } });
    expect(replayed.status).toBe(200);
    expect(await replayed.json()).toMatchObject({ executionId, status: 'success', paymentReplay: true });
    expect(replayed.headers.get('payment-response')).toBeTruthy();
    expect(await balanceOf(await payee())).toBe(payeeBefore + PRICE_UNITS);
  }, 90_000);
});

describe('over MCP, a paid tool whose settlement is not mined in time', () => {
  // The listing's own server (/mcp/w/microtip, tool `microtip`), and the gateway's (/mcp, `call_workflow` with its slug).
  const endpoints = [
    { name: 'on /mcp/w/microtip', path: '/mcp/w/microtip', tool: 'microtip', args: {}, keyed: false },
    { name: 'on /mcp with call_workflow', path: '/mcp', tool: 'call_workflow', args: { slug: 'microtip' }, keyed: true },
  ];
  it.each(endpoints)(
    'answers awaiting_payment $name as a result (not an error) with no payment receipt, and the run gives its result once mined',
    async ({ path, tool, args, keyed }) => {
      const account = await funded();
      const client = new Client({ name: 'paying-agent', version: '1.0.0' });
      const requestInit = keyed ? { headers: { authorization: `Bearer ${gw.ownerKey}` } } : undefined;
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}${path}`), { requestInit }));
      const unpaid = await client.callTool({ name: tool, arguments: args });
      expect(unpaid.isError).toBe(true);
      const x402 = new x402Client().register('eip155:*', new ExactEvmScheme(account));
      x402.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: usdc(), maxAmountPerPayment: '1000000' }] });
      const payment = await x402.createPaymentPayload(unpaid.structuredContent as never);
      await holdMining(chain);
      let executionId: string;
      try {
        const paid = await client.callTool({ name: tool, arguments: args, _meta: { 'x402/payment': payment } });
        expect(paid.isError).toBeFalsy();
        expect(paid.structuredContent).toMatchObject({ status: 'awaiting_payment', resultUrl: expect.stringContaining('/api/mcp/workflows/microtip/calls/') });
        expect(paid._meta?.['x402/payment-response']).toBeUndefined();
        executionId = (paid.structuredContent as { executionId: string }).executionId;
      } finally {
        await resumeMining(chain);
        await client.close();
      }
      const result = await fetch(`${gw.url}/api/mcp/workflows/microtip/calls/${executionId}?timeoutMs=30000`);
      expect(await result.json()).toMatchObject({ executionId, status: 'success', output: { result: { thanks: true } } });
    },
    60_000,
  );
});

describe('a gateway killed while a settlement is on its way', () => {
  it('leaves a payment the next start resolves from the chain: the transfer was mined, so the run starts', async () => {
    const account = await funded();
    const payeeBefore = await balanceOf(await payee());
    await gw.close();
    // The same data directory, served by a `flowgate serve` process with the default (long) settlement wait.
    const instance = await spawnGateway({ ...baseEnv(chain.url), ...(await testDatabaseEnv(dataDir, undefined)) }, { dataDir });
    let executionId: string;
    try {
      await holdMining(chain);
      const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
      client.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: usdc(), maxAmountPerPayment: '1000000' }] });
      const call = wrapFetchWithPayment(fetch, client)(`${instance.url}/api/mcp/workflows/microtip/call`, post).catch((error: unknown) => error);
      await until('the settlement in the pool', async () => (await pendingInPool(chain)) > 0);
      await instance.kill();
      expect(await call).toBeInstanceOf(Error);
    } finally {
      await resumeMining(chain);
    }
    const store = await openTestStoreFor(dataDir);
    try {
      const left = await store.selectFrom('payments').selectAll().where('status', '=', 'verified').execute();
      expect(left).toHaveLength(1);
      executionId = left[0]!.execution_id!;
      expect((await store.selectFrom('workflow_executions').select('status').where('id', '=', executionId).executeTakeFirstOrThrow()).status).toBe(
        'awaiting_payment',
      );
    } finally {
      await store.destroy();
    }

    // Restarted (a short settlement wait, so the leftover counts as stale at once): resolved from the chain.
    gw = await startTestGateway({ dataDir, env: { ...baseEnv(chain.url), FLOWGATE_PAYMENT_CONFIRMATION_MS: '500' } });
    const result = await fetch(`${gw.url}/api/mcp/workflows/microtip/calls/${executionId}?timeoutMs=30000`);
    expect(await result.json()).toMatchObject({ executionId, status: 'success', output: { result: { thanks: true } } });
    const payment = await paymentOf(gw.gateway.services.store, executionId);
    expect(payment).toMatchObject({ status: 'settled', transaction_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: payment!.transaction_hash as Hex });
    expect(receipt.status).toBe('success');
    expect(await balanceOf(await payee())).toBe(payeeBefore + PRICE_UNITS);
  }, 120_000);
});

describe('a run left waiting although its payment settled', () => {
  it('is started by the next sweep (the process stopped between recording the settlement and releasing the run)', async () => {
    const { services } = gw.gateway;
    const listing = await getListing(services.store, 'microtip');
    // The state such a stop leaves, written directly: a run awaiting its payment, and that payment recorded settled a while ago.
    const executionId = await prepareGatedRun(services, await getWorkflow(services.store, listing.organizationId, listing.workflowId), {}, 'Manual');
    const settledAt = new Date(Date.now() - 5_000).toISOString();
    await services.store
      .insertInto('payments')
      .values({
        id: `pay-${executionId}`,
        authorization_key: `31337:${usdc()}:0x${'1'.repeat(40)}:0x${'2'.repeat(64)}`.toLowerCase(),
        signature_hash: 'x',
        protocol: 'x402',
        listing_slug: 'microtip',
        execution_id: executionId,
        status: 'settled',
        network: 'eip155:31337',
        asset: usdc(),
        amount: String(PRICE_UNITS),
        payer: `0x${'1'.repeat(40)}`,
        pay_to: await payee(),
        transaction_hash: `0x${'3'.repeat(64)}`,
        receipt: '{}',
        error: null,
        valid_before: null,
        created_at: settledAt,
        updated_at: settledAt,
      })
      .execute();
    const result = await fetch(`${gw.url}/api/mcp/workflows/microtip/calls/${executionId}?timeoutMs=30000`);
    expect(await result.json()).toMatchObject({ executionId, status: 'success', output: { result: { thanks: true } } });
  }, 60_000);
});

describe('an HTTP facilitator whose answer to a settlement is lost', () => {
  it('leaves the payment open, not failed: the transfer it sent is found on chain and the run starts, charged once', async () => {
    // A facilitator speaking x402's HTTP API (the in-process one behind it) that settles, then answers like a proxy that timed out.
    const gas = privateKeyToAccount(generatePrivateKey());
    await gw.gateway.services.devnet!.fund(gas.address, { eth: '1' });
    const inner = createLocalFacilitator(gas, chain.chain, chain.url, 'eip155:31337');
    const sent: string[] = [];
    const server = http.createServer(async (req, res) => {
      let text = '';
      for await (const chunk of req) text += chunk;
      const json = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.url === '/supported') return json(200, await inner.getSupported());
      const { paymentPayload, paymentRequirements } = JSON.parse(text);
      if (req.url === '/verify') return json(200, await inner.verify(paymentPayload, paymentRequirements));
      if (refusing) return res.writeHead(400, { 'content-type': 'text/html' }).end('<html><body>400 Bad Request</body></html>');
      const settled = await inner.settle(paymentPayload, paymentRequirements);
      sent.push(settled.transaction);
      res.writeHead(504, { 'content-type': 'text/html' }).end('<html><body>504 Gateway Time-out</body></html>');
    });
    let refusing = false;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const facilitatorUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const viaHttp = await startTestGateway({ env: { ...baseEnv(chain.url), FLOWGATE_FACILITATOR_URL: facilitatorUrl } });
    try {
      const account = await funded();
      const before = await balanceOf(account.address);
      const res = await x402Fetch(account).pay(`${viaHttp.url}/api/mcp/workflows/microtip/call`, post);
      const body = (await res.json()) as { executionId: string; status: string; hint: string };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.status).toBe('awaiting_payment');
      expect(body.hint).toMatch(/outcome is not known yet/);
      expect(sent).toHaveLength(1);
      expect(await paymentOf(viaHttp.gateway.services.store, body.executionId)).toMatchObject({ status: 'settling', transaction_hash: null });

      const result = await fetch(`${viaHttp.url}/api/mcp/workflows/microtip/calls/${body.executionId}?timeoutMs=30000`);
      expect(await result.json()).toMatchObject({ executionId: body.executionId, status: 'success', output: { result: { thanks: true } } });
      expect(await paymentOf(viaHttp.gateway.services.store, body.executionId)).toMatchObject({ status: 'settled', transaction_hash: sent[0] });
      expect(await balanceOf(account.address)).toBe(before - PRICE_UNITS);

      // A refusal the facilitator (or a proxy before it) gave without settling closes the payment at once, as before.
      refusing = true;
      const refused = await x402Fetch(account).pay(`${viaHttp.url}/api/mcp/workflows/microtip/call`, post);
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as { reason: string }).reason).toMatch(/settlement failed \(Facilitator settle failed \(400\)/);
      expect(await viaHttp.gateway.services.store.selectFrom('payments').select('status').where('status', '=', 'settling').execute()).toHaveLength(0);
      expect(await balanceOf(account.address)).toBe(before - PRICE_UNITS);
    } finally {
      await viaHttp.close();
      server.close();
    }
  }, 60_000);
});

// Last: it moves the chain's clock past the authorization's validBefore, which later payments would then be past too.
describe('a paid call whose settlement is never mined', () => {
  it('ends the run as an error, charging nothing, when the settlement is dropped and the authorization expires unused (MPP)', async () => {
    const account = await funded();
    const payerBefore = await balanceOf(account.address);
    const payeeBefore = await balanceOf(await payee());
    await holdMining(chain);
    let executionId: string;
    try {
      const res = await devnetMppx(account, usdc()).fetch(callUrl(), post);
      const body = (await res.json()) as { executionId: string; status: string };
      expect(res.status).toBe(200);
      expect(body.status).toBe('awaiting_payment');
      executionId = body.executionId;
      expect(await paymentOf(gw.gateway.services.store, executionId)).toMatchObject({ status: 'settling', protocol: 'mpp' });
      // The node loses the settlement, and the chain's clock passes the authorization's validBefore.
      await chainRpc(chain, 'anvil_dropAllTransactions');
      const validBefore = Number((await paymentOf(gw.gateway.services.store, executionId))!.valid_before);
      expect(validBefore).toBeGreaterThan(Date.now() / 1000);
      await chainRpc(chain, 'evm_setNextBlockTimestamp', [validBefore + 1]);
    } finally {
      await resumeMining(chain);
    }

    const result = await fetch(`${gw.url}/api/mcp/workflows/microtip/calls/${executionId}?timeoutMs=30000`);
    const answer = (await result.json()) as { status: string; error: string };
    expect(answer.status).toBe('error');
    expect(answer.error).toMatch(/Payment settlement failed: the payment authorization expired unused .*nothing was charged/);
    expect(await paymentOf(gw.gateway.services.store, executionId)).toMatchObject({ status: 'failed', error: expect.stringContaining('expired unused') });
    const steps = await gw.gateway.services.store.selectFrom('workflow_execution_logs').select('id').where('execution_id', '=', executionId).execute();
    expect(steps).toHaveLength(0);
    expect(await balanceOf(account.address)).toBe(payerBefore);
    expect(await balanceOf(await payee())).toBe(payeeBefore);
  }, 90_000);
});
