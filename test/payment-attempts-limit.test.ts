import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startRpcProxy, type RpcProxy } from './helpers/rpc-proxy.ts';

/**
 * A signed payment whose fields match the offer costs the gateway's node a code
 * read and a simulation before it can be refused (here: a payer with no USDC).
 * A hostile payer sending such payments without a credential is held to the
 * anonymous per-IP REST budget (FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP): past
 * it, an attempt is answered 429 before anything reaches the node.
 */

let chain: TestChain;
let proxy: RpcProxy;
let gw: TestGateway;
const BUDGET = 6;

beforeAll(async () => {
  chain = await startTestChain(31337);
  proxy = await startRpcProxy(chain.url);
  gw = await startTestGateway({
    env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: proxy.url, FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP: String(BUDGET) },
  });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await chain?.stop();
});

const nodeCalls = () => [...proxy.calls.values()].reduce((sum, n) => sum + n, 0);

describe('signed payments from a payer who cannot pay', () => {
  it("are refused with the chain's reason, and cost the node reads only within the per-IP budget: past it they are 429 and reach nothing", async () => {
    const usdc = gw.gateway.services.devnet!.usdcAddress;
    const payer = privateKeyToAccount(generatePrivateKey()); // no USDC: every payment verifies its fields, then fails on chain
    const client = new x402Client().register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: usdc, maxAmountPerPayment: '10000000' }] });
    const pay = wrapFetchWithPayment(fetch, client);
    const attempt = async () => {
      const before = nodeCalls();
      const res = await pay(`${gw.url}/api/mcp/workflows/microtip/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      const body = (await res.json()) as { code?: string; reason?: string };
      // Reads started for a refused payment and never awaited would land after its answer: count them too.
      await new Promise((resolve) => setTimeout(resolve, 100));
      return { status: res.status, body, nodeCalls: nodeCalls() - before };
    };

    // Each attempt is two requests (the unpaid call's 402, then the signed retry), both counted against the budget.
    const refused = [await attempt(), await attempt(), await attempt()];
    for (const { status, body, nodeCalls } of refused) {
      expect(status, JSON.stringify(body)).toBe(402);
      // The chain's reason, on one line, without the viem error's arguments, docs link and version.
      expect(body.reason).toMatch(/^verification failed \(.*transfer amount exceeds balance\)$/);
      expect(body.reason).not.toMatch(/\n|Contract Call|Docs:|Version:/);
      expect(nodeCalls).toBeGreaterThan(0);
    }

    const past = [await attempt(), await attempt()];
    for (const { status, body, nodeCalls } of past) {
      expect(status, JSON.stringify(body)).toBe(429);
      expect(body.code).toBe('rate_limited');
      expect(nodeCalls).toBe(0);
    }
  });
});
