import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Address } from 'viem';
import { wrapFetchWithPayment, decodePaymentResponseHeader } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { evm } from 'mppx/client';
import { Credential, Receipt } from 'mppx';
import { McpClient } from 'mppx/mcp/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { testUsdcAbi, TEST_USDC } from '../src/chains/devnet/test-usdc.ts';
import { CATALOG_ORGANIZATION_SLUG } from '../src/catalog/sync.ts';
import { getListing } from '../src/catalog/listings.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { devnetMppx } from './helpers/mpp-payer.ts';
import { refusePaymentLinks, refuseRunInserts } from './helpers/store-faults.ts';

/**
 * Paid calls against a real devnet (anvil + the test USDC), paid with client
 * libraries nobody here wrote: @x402/fetch and mppx/client. Balances are read
 * back from the chain.
 */

let chain: TestChain;
let gw: TestGateway;
let usdc: Address;
let payee: Address;
const NETWORK = 'eip155:31337';

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RATE_LIMITS: 'off' } });
  usdc = gw.gateway.services.devnet!.usdcAddress;
  const { organization } = await gw.gateway.services.organizations.ensure(CATALOG_ORGANIZATION_SLUG);
  payee = (await gw.gateway.services.organizations.wallet(organization.id))!.walletAddress as Address;
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

const url = (slug: string) => `${gw.url}/api/mcp/workflows/${slug}/call`;
const balance = (address: Address) =>
  chain.publicClient.readContract({ address: usdc, abi: testUsdcAbi, functionName: 'balanceOf', args: [address] }) as Promise<bigint>;
const authorizationUsed = (payer: Address, nonce: `0x${string}`) =>
  chain.publicClient.readContract({ address: usdc, abi: testUsdcAbi, functionName: 'authorizationState', args: [payer, nonce] }) as Promise<boolean>;

async function fundedPayer(usdcAmount = '100'): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  if (usdcAmount !== '0') await gw.gateway.services.devnet!.fund(account.address, { usdc: usdcAmount });
  return account;
}

/** @x402/fetch, allowed to pay the devnet token; records the PAYMENT-SIGNATURE it sent. */
function x402Fetch(account: PrivateKeyAccount) {
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const signature = request.headers.get('payment-signature');
    if (signature) sent.push(signature);
    return fetch(request);
  };
  const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
  client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: '10000000' }] });
  return { fetch: wrapFetchWithPayment(recording, client), sent, client };
}

function mppFetch(account: PrivateKeyAccount) {
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const authorization = request.headers.get('authorization');
    if (authorization) sent.push(authorization);
    return fetch(request);
  };
  const mppx = devnetMppx(account, usdc, recording);
  return { fetch: (input: string, init?: RequestInit) => mppx.fetch(input, init), sent };
}

const post = (body: unknown = {}) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('the unpaid call', () => {
  it('answers 402 with PAYMENT-REQUIRED (x402 v2) and WWW-Authenticate: Payment (MPP) plus an actionable body', async () => {
    const res = await fetch(url('stablecoin-yield-compare-base'), post());
    expect(res.status).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(required).toMatchObject({
      x402Version: 2,
      resource: { url: url('stablecoin-yield-compare-base'), mimeType: 'application/json' },
      accepts: [{ scheme: 'exact', network: NETWORK, amount: '50000', asset: usdc, payTo: payee, extra: { name: 'USD Coin', version: '2' } }],
    });
    expect(required.extensions?.bazaar).toMatchObject({ info: { input: { method: 'POST' } } });
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toMatch(/^Payment /);
    expect(challenge).toContain('method="evm"');
    expect(challenge).toContain('intent="charge"');
    const body = await res.json();
    expect(body).toMatchObject({
      code: 'payment_required',
      price: { mode: 'fixed', amount: '0.05', currency: 'USD' },
      offers: [
        { protocol: 'x402', retryHeader: 'PAYMENT-SIGNATURE', amount: '50000', payTo: payee },
        { protocol: 'mpp', method: 'evm', intent: 'charge', currency: 'USDC', retryHeader: 'Authorization: Payment <credential>' },
      ],
      howToPay: expect.stringContaining('PAYMENT-SIGNATURE'),
    });
    // Nothing ran.
    const rows = await gw.gateway.services.store.selectFrom('payments').selectAll().execute();
    expect(rows).toEqual([]);
  });

  it('offers the same x402 terms to every unpaid call and each a fresh MPP challenge; a refused payment still gets its reason', async () => {
    const [first, second] = [await fetch(url('microtip'), post()), await fetch(url('microtip'), post())];
    expect([first.status, second.status]).toEqual([402, 402]);
    // The x402 offer is the same, byte for byte (kept for a while rather than rebuilt for each call).
    expect(second.headers.get('payment-required')).toBe(first.headers.get('payment-required'));
    // mppx's client derives its payment's nonce from the challenge: a reused challenge would turn a payer's next payment into a replay.
    const [a, b] = [(await first.json()).mpp.challenges[0], (await second.json()).mpp.challenges[0]];
    expect(a.id).not.toBe(b.id);
    expect(first.headers.get('www-authenticate')).toContain(`id="${a.id}"`);
    expect(second.headers.get('www-authenticate')).toContain(`id="${b.id}"`);
    expect(Date.parse(b.expires) - Date.now()).toBeGreaterThan(4 * 60_000);
    const refused = await fetchJson(url('microtip'), { ...post(), headers: { 'content-type': 'application/json', 'payment-signature': 'not-base64-json' } });
    expect(refused.status).toBe(402);
    expect(refused.body.reason).toMatch(/not base64-encoded x402 JSON/);
    expect(decodePaymentRequiredHeader(refused.headers.get('payment-required')!).error).toMatch(/^Payment refused: /);
    // The kept offer was not changed by the refusal.
    expect((await fetch(url('microtip'), post())).headers.get('payment-required')).toBe(first.headers.get('payment-required'));
  });

  it('validates the body before asking for payment', async () => {
    const res = await fetchJson(url('eu-ai-act-audit'), post({}));
    expect(res.status).toBe(400);
    expect(res.body.issues[0].path).toBe('agentName');
  });
});

describe('paying with x402 (@x402/fetch)', () => {
  it('settles concurrent paid calls from different payers, each exactly once', async () => {
    const payers = await Promise.all(Array.from({ length: 8 }, () => fundedPayer('1')));
    const payeeBefore = await balance(payee);
    const responses = await Promise.all(payers.map((payer) => x402Fetch(payer).fetch(url('microtip'), post())));
    expect(responses.map((r) => r.status)).toEqual(payers.map(() => 200));
    const ids = new Set(await Promise.all(responses.map(async (r) => ((await r.json()) as { executionId: string }).executionId)));
    expect(ids.size).toBe(payers.length);
    for (const payer of payers) expect(await balance(payer.address)).toBe(1_000_000n - 10_000n);
    expect(await balance(payee)).toBe(payeeBefore + 10_000n * BigInt(payers.length));
  });

  it('settles on chain, runs once, and a replayed payment returns the original execution', async () => {
    const payer = await fundedPayer();
    const [payerBefore, payeeBefore] = [await balance(payer.address), await balance(payee)];
    const { fetch: pay, sent } = x402Fetch(payer);
    const res = await pay(url('microtip'), post());
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ executionId: expect.any(String), status: 'success', output: { result: { thanks: true } } });
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, network: NETWORK, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), payer: payer.address });

    expect(await balance(payer.address)).toBe(payerBefore - 10000n);
    expect(await balance(payee)).toBe(payeeBefore + 10000n);
    const signature = sent.at(-1)!;
    const nonce = (decodePaymentSignatureHeader(signature).payload as { authorization: { nonce: `0x${string}` } }).authorization.nonce;
    expect(await authorizationUsed(payer.address, nonce)).toBe(true);

    const replay = await fetchJson(url('microtip'), { ...post(), headers: { 'content-type': 'application/json', 'payment-signature': signature } });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ executionId: body.executionId, paymentReplay: true });
    expect(replay.headers.get('payment-response')).toBeTruthy();
    expect(await balance(payer.address)).toBe(payerBefore - 10000n);
    const runs = await gw.gateway.services.store.selectFrom('payments').select('execution_id').where('execution_id', '=', body.executionId).execute();
    expect(runs).toHaveLength(1);

    // Payer and nonce are public on chain once settled: knowing them (without the signature) gets nothing back.
    const forged = decodePaymentSignatureHeader(signature) as unknown as { payload: { signature: string } };
    forged.payload.signature = `0x${'11'.repeat(65)}`;
    const stolen = await fetchJson(url('microtip'), {
      ...post(),
      headers: { 'content-type': 'application/json', 'payment-signature': encodePaymentSignatureHeader(forged as never) },
    });
    expect(stolen.status).toBe(402);
    expect(stolen.body.reason).toMatch(/already used/);
    expect(stolen.body.executionId).toBeUndefined();

    // The signature itself is public too (the settlement's calldata): a replay gets the paid answer only for the same
    // call, and only for ten minutes, never another call's answer or a free one.
    const otherCall = await fetchJson(url('microtip'), {
      ...post({ note: 'another call' }),
      headers: { 'content-type': 'application/json', 'payment-signature': signature },
    });
    expect(otherCall.status).toBe(402);
    expect(otherCall.body.reason).toMatch(/already paid for a call with other inputs/);
    expect(otherCall.body.output).toBeUndefined();
    await gw.gateway.services.store
      .updateTable('payments')
      .set({ updated_at: new Date(Date.now() - 11 * 60_000).toISOString() })
      .where('execution_id', '=', body.executionId)
      .execute();
    const late = await fetchJson(url('microtip'), { ...post(), headers: { 'content-type': 'application/json', 'payment-signature': signature } });
    expect(late.status).toBe(402);
    expect(late.body.reason).toMatch(/already used; a payment pays for one call/);
  });

  it('refuses a payer without funds with 402 and a reason, running nothing', async () => {
    const broke = await fundedPayer('0');
    const { fetch: pay } = x402Fetch(broke);
    const res = await pay(url('microtip'), post());
    expect(res.status).toBe(402);
    const body = await res.json();
    expect(body.reason).toMatch(/verification failed/);
    expect(body.reason.toLowerCase()).toMatch(/insufficient|balance|funds/);
  });

  it('refuses a tampered signature and a payment signed for another amount', async () => {
    const payer = await fundedPayer();
    const unpaid = await fetch(url('microtip'), post());
    const required = decodePaymentRequiredHeader(unpaid.headers.get('payment-required')!);
    const client = new x402Client().register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: usdc }] });
    const payload = await client.createPaymentPayload(required);
    const send = (slug: string, p: unknown) =>
      fetchJson(url(slug), { ...post(), headers: { 'content-type': 'application/json', 'payment-signature': encodePaymentSignatureHeader(p as never) } });

    const tampered = structuredClone(payload) as unknown as { payload: { signature: string } };
    tampered.payload.signature = tampered.payload.signature.slice(0, -4) + (tampered.payload.signature.endsWith('1b') ? '1c1c' : '1b1b');
    const bad = await send('microtip', tampered);
    expect(bad.status).toBe(402);
    expect(bad.body.reason).toMatch(/verification failed/);

    // Signed for 0.01 USD, presented to a 3 USD workflow: refused for its route, and (route edited to match) for its amount.
    const wrongAmount = await send('buy-me-a-coffee', payload);
    expect(wrongAmount.status).toBe(402);
    expect(wrongAmount.body.reason).toMatch(/made for .*microtip/);
    const retargeted = await send('buy-me-a-coffee', { ...payload, resource: { ...payload.resource!, url: url('buy-me-a-coffee') } });
    expect(retargeted.status).toBe(402);
    expect(retargeted.body.reason).toMatch(/does not match this offer/);

    expect(await balance(payer.address)).toBe(100_000_000n);
  });

  it('garbage in PAYMENT-SIGNATURE is a 402 with a reason; both credentials at once is a 400', async () => {
    const garbage = await fetchJson(url('microtip'), { ...post(), headers: { 'content-type': 'application/json', 'payment-signature': '%%%not-base64%%%' } });
    expect(garbage.status).toBe(402);
    expect(garbage.body.reason).toMatch(/PAYMENT-SIGNATURE/);
    expect(garbage.headers.get('payment-required')).toBeTruthy();
    const both = await fetchJson(url('microtip'), {
      ...post(),
      headers: { 'content-type': 'application/json', 'payment-signature': 'abc', authorization: 'Payment abc' },
    });
    expect(both.status).toBe(400);
    expect(both.body.code).toBe('conflicting_payment_credentials');
    const mppGarbage = await fetchJson(url('microtip'), { ...post(), headers: { 'content-type': 'application/json', authorization: 'Payment !!!' } });
    expect(mppGarbage.status).toBe(402);
    expect(mppGarbage.body.reason).toMatch(/Authorization: Payment/);
  });
});

describe('a workflow published by an organization (publish_workflow)', () => {
  it('is paid with @x402/fetch into the publishing organization wallet', async () => {
    const key = await gw.createKey({ scope: 'mcp:write', org: 'paid-publisher' });
    const { organization } = await gw.gateway.services.organizations.ensure('paid-publisher');
    const publisherWallet = (await gw.gateway.services.organizations.wallet(organization.id))!.walletAddress as Address;
    const headers = { 'content-type': 'application/json' };
    const created = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      key,
      headers,
      body: JSON.stringify({
        name: 'Paid echo',
        nodes: [
          { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', config: { triggerType: 'Manual' } } },
          {
            id: 'echo',
            type: 'action',
            data: { label: 'Echo', config: { actionType: 'code/run-code', code: 'return { echoed: {{@trigger:Manual Trigger.word}} };' } },
          },
        ],
        edges: [{ id: 'e0', source: 'trigger', target: 'echo' }],
      }),
    });
    const published = await fetchJson(`${gw.url}/api/workflows/${created.body.id}/listing`, {
      method: 'POST',
      key,
      headers,
      body: JSON.stringify({
        slug: 'paid-echo',
        description: 'Echoes a word for 0.02 USD.',
        price: '0.02',
        inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'], additionalProperties: false },
        result: { nodeId: 'echo', path: 'result' },
      }),
    });
    expect(published.status).toBe(200);

    const unpaid = await fetch(url('paid-echo'), post({ word: 'hi' }));
    expect(unpaid.status).toBe(402);
    expect(decodePaymentRequiredHeader(unpaid.headers.get('payment-required')!).accepts[0]).toMatchObject({ amount: '20000', payTo: publisherWallet });

    const payer = await fundedPayer();
    const [payerBefore, publisherBefore, catalogBefore] = [await balance(payer.address), await balance(publisherWallet), await balance(payee)];
    const res = await x402Fetch(payer).fetch(url('paid-echo'), post({ word: 'hi' }));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'success', output: { result: { echoed: 'hi' } } });
    expect(await balance(payer.address)).toBe(payerBefore - 20000n);
    expect(await balance(publisherWallet)).toBe(publisherBefore + 20000n);
    expect(await balance(payee)).toBe(catalogBefore);
  });
});

describe('paying with MPP (mppx/client)', () => {
  it('settles on chain, runs once, and a replayed credential returns the original execution', async () => {
    const payer = await fundedPayer();
    const [payerBefore, payeeBefore] = [await balance(payer.address), await balance(payee)];
    const { fetch: pay, sent } = mppFetch(payer);
    const res = await pay(url('agent-task'), post({ task: 'think' }));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ status: 'success', output: { result: { task: 'think', accepted: true } } });
    const receipt = Receipt.deserialize(res.headers.get('payment-receipt')!);
    expect(receipt).toMatchObject({ status: 'success', method: 'evm', reference: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await balance(payer.address)).toBe(payerBefore - 10000n);
    expect(await balance(payee)).toBe(payeeBefore + 10000n);

    const credential = sent.at(-1)!;
    const replay = await fetchJson(url('agent-task'), {
      ...post({ task: 'think' }),
      headers: { 'content-type': 'application/json', authorization: credential },
    });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ executionId: body.executionId, paymentReplay: true });
    expect(await balance(payer.address)).toBe(payerBefore - 10000n);
  });

  it('one payer paying twice in a row makes two payments, neither a replay of the other', async () => {
    const payer = await fundedPayer();
    const before = await balance(payer.address);
    const { fetch: pay } = mppFetch(payer);
    const answers = [];
    for (let i = 0; i < 2; i++) {
      const res = await pay(url('microtip'), post());
      expect(res.status).toBe(200);
      answers.push(await res.json());
    }
    expect(answers.map((a) => a.paymentReplay)).toEqual([undefined, undefined]);
    expect(answers[0].executionId).not.toBe(answers[1].executionId);
    expect(await balance(payer.address)).toBe(before - 2n * 10000n);
  });

  it('refuses a tampered credential before claiming its payment, and its untampered twin then pays', async () => {
    const payer = await fundedPayer();
    const before = await balance(payer.address);
    // mppx signs for the challenge; the paid request is held back, so the credential has never reached the gateway.
    let held: string | undefined;
    const holding: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      held ??= request.headers.get('authorization') ?? undefined;
      return held ? new Response(null, { status: 418 }) : fetch(request);
    };
    expect((await devnetMppx(payer, usdc, holding).fetch(url('microtip'), post())).status).toBe(418);
    const credential = Credential.deserialize(held!);
    const payload = credential.payload as { signature: string };
    const tampered = Credential.serialize({
      ...credential,
      payload: { ...payload, signature: payload.signature.slice(0, -4) + (payload.signature.endsWith('1b') ? '1c1c' : '1b1b') },
    });
    const send = (authorization: string) => fetchJson(url('microtip'), { ...post(), headers: { 'content-type': 'application/json', authorization } });

    const bad = await send(tampered);
    expect(bad.status).toBe(402);
    expect(bad.body.reason).toMatch(/verification failed/);
    const good = await send(held!);
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ status: 'success', output: { result: { thanks: true } } });
    expect(good.body.paymentReplay).toBeFalsy();
    expect(await balance(payer.address)).toBe(before - 10000n);
  });

  it('refuses a credential minted for another workflow', async () => {
    const payer = await fundedPayer();
    const { fetch: pay, sent } = mppFetch(payer);
    await pay(url('microtip'), post());
    const credentialForMicrotip = sent.at(-1)!;
    // Pay again for a fresh credential we never let reach the gateway.
    const challenge = await fetch(url('microtip'), post());
    expect(challenge.status).toBe(402);
    const reused = await fetchJson(url('agent-task'), {
      ...post({ task: 'think' }),
      headers: { 'content-type': 'application/json', authorization: credentialForMicrotip },
    });
    expect(reused.status).toBe(402);
    expect(reused.body.reason).toMatch(/already used for a call to microtip/);
  });
});

describe('paying over MCP', () => {
  async function connect(slug: string) {
    const client = new Client({ name: 'paying-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp/w/${slug}`)));
    return client;
  }

  it('x402: the unpaid call is an isError result whose structuredContent is the PaymentRequired; _meta["x402/payment"] pays', async () => {
    const payer = await fundedPayer();
    const before = await balance(payer.address);
    const client = await connect('microtip');
    const unpaid = await client.callTool({ name: 'microtip', arguments: {} });
    expect(unpaid.isError).toBe(true);
    const required = unpaid.structuredContent as { x402Version: number; accepts: { amount: string; payTo: string }[] };
    expect(required).toMatchObject({ x402Version: 2, accepts: [{ amount: '10000', payTo: payee }] });
    expect((unpaid._meta?.['org.paymentauth/payment-required'] as { challenges: unknown[] }).challenges).toHaveLength(1);

    const x402 = new x402Client().register('eip155:*', new ExactEvmScheme(payer));
    x402.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: usdc }] });
    const payment = await x402.createPaymentPayload(required as never);
    const paid = await client.callTool({ name: 'microtip', arguments: {}, _meta: { 'x402/payment': payment } });
    expect(paid.isError).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ status: 'success', output: { result: { thanks: true } } });
    expect(paid._meta?.['x402/payment-response']).toMatchObject({ success: true, network: NETWORK });
    expect(await balance(payer.address)).toBe(before - 10000n);

    const again = await client.callTool({ name: 'microtip', arguments: {}, _meta: { 'x402/payment': payment } });
    expect((again.structuredContent as { executionId: string }).executionId).toBe((paid.structuredContent as { executionId: string }).executionId);
    expect(await balance(payer.address)).toBe(before - 10000n);
    await client.close();
  });

  it('MPP: mppx McpClient reads the challenge from _meta and pays with _meta["org.paymentauth/credential"]', async () => {
    const payer = await fundedPayer();
    const before = await balance(payer.address);
    const client = await connect('agent-task');
    McpClient.wrap(client, {
      methods: [
        evm.charge({
          account: payer,
          networks: [31337],
          currencies: [usdc],
          authorization: { name: TEST_USDC.name, version: TEST_USDC.version },
          decimals: TEST_USDC.decimals,
        }),
      ],
    });
    const result = (await client.callTool({ name: 'agent-task', arguments: { task: 'monitor' } })) as Awaited<ReturnType<Client['callTool']>> & {
      receipt?: unknown;
    };
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ status: 'success', output: { result: { task: 'monitor' } } });
    expect(result.receipt).toMatchObject({ status: 'success', method: 'evm' });
    expect(await balance(payer.address)).toBe(before - 10000n);
    await client.close();
  });
});

describe('MPP error form over MCP (callers announcing Accept-Payment)', () => {
  const toolsCall = (slug: string, args: Record<string, unknown>, headers: Record<string, string>) =>
    fetchJson(`${gw.url}/mcp/w/${slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: slug, arguments: args } }),
    });

  it('an unpaid call is JSON-RPC error -32042 with data.challenges when the caller accepts evm/charge; the result form otherwise', async () => {
    const announced = await toolsCall('agent-task', { task: 'think' }, { 'accept-payment': 'evm/charge' });
    expect(announced.status).toBe(200);
    expect(announced.body).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32042, data: { httpStatus: 402, challenges: [{ method: 'evm', intent: 'charge' }], x402Version: 2 } },
    });
    expect(announced.body.result).toBeUndefined();

    // Not announced, or announced with q=0 / another method: the isError result with the challenges in _meta.
    for (const headers of [{}, { 'accept-payment': 'evm/charge;q=0' }, { 'accept-payment': 'tempo/charge' }] as Record<string, string>[]) {
      const plain = await toolsCall('agent-task', { task: 'think' }, headers);
      expect(plain.body.error, JSON.stringify(headers)).toBeUndefined();
      expect(plain.body.result).toMatchObject({ isError: true, _meta: { 'org.paymentauth/payment-required': { challenges: [expect.any(Object)] } } });
    }
    // Free and failing non-payment calls are unchanged.
    expect((await toolsCall('helloworld', {}, { 'accept-payment': 'evm/charge' })).body.result).toMatchObject({ structuredContent: { status: 'success' } });
  });

  it('a wildcard Accept-Payment counts; a refused payment is -32043 with the reason', async () => {
    const wildcard = await toolsCall('agent-task', { task: 'think' }, { 'accept-payment': '*/*' });
    expect(wildcard.body.error.code).toBe(-32042);
    const bad = await fetchJson(`${gw.url}/mcp/w/agent-task`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'accept-payment': 'evm/charge' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 8,
        method: 'tools/call',
        params: { name: 'agent-task', arguments: { task: 'think' }, _meta: { 'x402/payment': { x402Version: 2 } } },
      }),
    });
    expect(bad.body.error).toMatchObject({ code: -32043, data: { reason: expect.stringMatching(/resource/), challenges: [expect.any(Object)] } });
  });

  it('mppx/client fetch as the MCP transport pays through the -32042 error', async () => {
    const payer = await fundedPayer();
    const before = await balance(payer.address);
    // What went over the wire under mppx: the -32042 error, then the paid retry.
    const seen: { error?: { code: number }; result?: unknown }[] = [];
    const wire: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(init?.body ?? '').includes('tools/call')) seen.push(await response.clone().json());
      return response;
    };
    const mppx = devnetMppx(payer, usdc, wire);
    const client = new Client({ name: 'mppx-fetch-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp/w/agent-task`), { fetch: (input, init) => mppx.fetch(input as string, init) }),
    );
    const result = await client.callTool({ name: 'agent-task', arguments: { task: 'execute' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ status: 'success', output: { result: { task: 'execute' } } });
    expect(result._meta?.['org.paymentauth/receipt']).toMatchObject({ status: 'success', method: 'evm' });
    expect(await balance(payer.address)).toBe(before - 10000n);
    expect(seen.map((m) => m.error?.code ?? 'result')).toEqual([-32042, 'result']);
    await client.close();
  });
});

describe('a paid call whose run cannot start', () => {
  /** A signed x402 payment for microtip (0.01 USD), not yet presented. */
  async function signedPayment() {
    const payer = await fundedPayer();
    const unpaid = await fetch(url('microtip'), post());
    expect(unpaid.status).toBe(402);
    const client = new x402Client().register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: usdc }] });
    const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(unpaid.headers.get('payment-required')!));
    const nonce = (payload.payload as { authorization: { nonce: `0x${string}` } }).authorization.nonce;
    const send = () =>
      fetchJson(url('microtip'), { ...post(), headers: { 'content-type': 'application/json', 'payment-signature': encodePaymentSignatureHeader(payload) } });
    return { payer, nonce, send };
  }

  const store = () => gw.gateway.services.store;

  it('is not settled when the workflow is disabled between the challenge and the paid retry; the same payment works once it is back', async () => {
    const { payer, nonce, send } = await signedPayment();
    const { workflowId } = await getListing(store(), 'microtip');
    const [payerBefore, payeeBefore] = [await balance(payer.address), await balance(payee)];
    await store().updateTable('workflows').set({ enabled: 0 }).where('id', '=', workflowId).execute();
    try {
      const refused = await send();
      expect(refused.status).toBe(410);
      expect(refused.body).toMatchObject({ code: 'workflow_disabled', error: expect.stringMatching(/disabled; nothing was run or charged/) });
      expect(refused.headers.get('payment-response')).toBeNull();
    } finally {
      await store().updateTable('workflows').set({ enabled: 1 }).where('id', '=', workflowId).execute();
    }
    expect(await balance(payer.address)).toBe(payerBefore);
    expect(await balance(payee)).toBe(payeeBefore);
    expect(await authorizationUsed(payer.address, nonce)).toBe(false);

    // Nothing was consumed: the very same signed payment settles once the workflow is back.
    const paid = await send();
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'success', output: { result: { thanks: true } } });
    expect(await balance(payer.address)).toBe(payerBefore - 10000n);
    expect(await authorizationUsed(payer.address, nonce)).toBe(true);
  });

  it('is not settled when the database refuses to create the run, and the answer says the payment can be retried', async () => {
    const { payer, nonce, send } = await signedPayment();
    const [payerBefore, payeeBefore] = [await balance(payer.address), await balance(payee)];
    // A real refusal from the database, after the payment verified and before it would settle.
    const allowRuns = await refuseRunInserts(store());
    try {
      const refused = await send();
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({
        code: 'run_not_started',
        retryable: true,
        error: expect.stringMatching(/could not be started.*payment was not settled/),
      });
      expect(refused.headers.get('payment-response')).toBeNull();
    } finally {
      await allowRuns();
    }
    expect(await balance(payer.address)).toBe(payerBefore);
    expect(await balance(payee)).toBe(payeeBefore);
    expect(await authorizationUsed(payer.address, nonce)).toBe(false);

    const paid = await send();
    expect(paid.status).toBe(200);
    expect(await authorizationUsed(payer.address, nonce)).toBe(true);
  });

  it('leaves nothing half-written when the database refuses the write after the run: no run waits for it, and the same payment then settles', async () => {
    const { payer, nonce, send } = await signedPayment();
    const { workflowId } = await getListing(store(), 'microtip');
    const waitingRuns = () =>
      store().selectFrom('workflow_executions').select('id').where('workflow_id', '=', workflowId).where('status', '=', 'awaiting_payment').execute();
    const waitingBefore = (await waitingRuns()).length;
    // The run is written, then the database refuses to link it to its payment: the two land together or not at all.
    const allowLinks = await refusePaymentLinks(store());
    try {
      const refused = await send();
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ code: 'run_not_started', retryable: true, error: expect.stringMatching(/payment was not settled/) });
    } finally {
      await allowLinks();
    }
    expect(await waitingRuns()).toHaveLength(waitingBefore);
    expect(await authorizationUsed(payer.address, nonce)).toBe(false);

    // Not "in progress" for ever: the same signed payment settles and runs.
    const paid = await send();
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'success' });
    expect(await authorizationUsed(payer.address, nonce)).toBe(true);
  });
});

describe('an x402 payment is bound to its route', () => {
  /** A signed x402 payment made for microtip (0.01 USD, same payee as agent-task), not yet presented. */
  async function paymentForMicrotip() {
    const payer = await fundedPayer();
    const unpaid = await fetch(url('microtip'), post());
    const client = new x402Client().register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: usdc }] });
    const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(unpaid.headers.get('payment-required')!));
    const nonce = (payload.payload as { authorization: { nonce: `0x${string}` } }).authorization.nonce;
    return { payer, payload, nonce };
  }
  const send = (slug: string, body: unknown, payment: unknown) =>
    fetchJson(url(slug), {
      ...post(body),
      headers: { 'content-type': 'application/json', 'payment-signature': encodePaymentSignatureHeader(payment as never) },
    });
  const paymentRows = (nonce: string) =>
    gw.gateway.services.store.selectFrom('payments').selectAll().where('authorization_key', 'like', `%:${nonce.toLowerCase()}`).execute();

  it('a payment made for slug A presented to slug B (same price and payee) is a 402 with a reason, nothing settled; it still pays for A', async () => {
    const { payer, payload, nonce } = await paymentForMicrotip();
    // Same amount and payee: only the route tells them apart.
    const agentTask = decodePaymentRequiredHeader((await fetch(url('agent-task'), post({ task: 'think' }))).headers.get('payment-required')!);
    expect(agentTask.accepts[0]).toMatchObject({ amount: payload.accepted.amount, payTo: payload.accepted.payTo });
    const before = await balance(payer.address);

    const elsewhere = await send('agent-task', { task: 'think' }, payload);
    expect(elsewhere.status).toBe(402);
    expect(elsewhere.body.reason).toMatch(/made for .*\/microtip\/call, not for .*\/agent-task\/call/);
    expect(elsewhere.body.executionId).toBeUndefined();
    expect(await authorizationUsed(payer.address, nonce)).toBe(false);
    expect(await balance(payer.address)).toBe(before);
    expect(await paymentRows(nonce)).toEqual([]);

    // Without the resource it paid for, a payment is refused too.
    const anonymous = structuredClone(payload) as { resource?: unknown };
    delete anonymous.resource;
    const unnamed = await send('microtip', {}, anonymous);
    expect(unnamed.status).toBe(402);
    expect(unnamed.body.reason).toMatch(/resource\.url/);

    const paid = await send('microtip', {}, payload);
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'success', output: { result: { thanks: true } } });
    expect(await authorizationUsed(payer.address, nonce)).toBe(true);
    expect(await balance(payer.address)).toBe(before - 10000n);
  });

  it('once presented for A, an authorization whose resource.url was edited to B is still refused by B (the record binds it to A)', async () => {
    const { payer, payload, nonce } = await paymentForMicrotip();
    const before = await balance(payer.address);
    // First presentation to A verifies but cannot start its run: nothing settles, the record stays bound to microtip.
    const allowRuns = await refuseRunInserts(gw.gateway.services.store);
    try {
      expect((await send('microtip', {}, payload)).status).toBe(503);
    } finally {
      await allowRuns();
    }
    expect(await paymentRows(nonce)).toMatchObject([{ status: 'released', listing_slug: 'microtip' }]);

    const edited = structuredClone(payload);
    edited.resource = { ...edited.resource!, url: url('agent-task') };
    const refused = await send('agent-task', { task: 'think' }, edited);
    expect(refused.status).toBe(402);
    expect(refused.body.reason).toMatch(/presented for microtip first/);
    expect(await authorizationUsed(payer.address, nonce)).toBe(false);
    expect(await balance(payer.address)).toBe(before);

    const paid = await send('microtip', {}, payload);
    expect(paid.status).toBe(200);
    expect(await authorizationUsed(payer.address, nonce)).toBe(true);
    expect(await paymentRows(nonce)).toMatchObject([{ status: 'settled', listing_slug: 'microtip', execution_id: paid.body.executionId }]);
  });
});

describe('expiry (last: it moves the chain clock forward)', () => {
  it('refuses an x402 authorization presented after validBefore', async () => {
    const payer = await fundedPayer();
    const unpaid = await fetch(url('microtip'), post());
    const client = new x402Client().register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: usdc }] });
    const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(unpaid.headers.get('payment-required')!));
    const send = (slug: string, p: unknown) =>
      fetchJson(url(slug), { ...post(), headers: { 'content-type': 'application/json', 'payment-signature': encodePaymentSignatureHeader(p as never) } });
    // Past validBefore on chain and on the clock the facilitator reads.
    await chain.testClient.increaseTime({ seconds: 3600 });
    await chain.testClient.mine({ blocks: 1 });
    const realNow = Date.now;
    Date.now = () => realNow() + 3_600_000;
    try {
      const expired = await send('microtip', payload);
      expect(expired.status).toBe(402);
      expect(expired.body.reason).toMatch(/verification failed/);
    } finally {
      Date.now = realNow;
    }
    expect(await balance(payer.address)).toBe(100_000_000n);
  });
});
