import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { erc20Abi, type Address } from 'viem';
import { testUsdcAbi } from '../src/chains/devnet/test-usdc.ts';
import { WATCHES_PER_ORG_PER_POLL } from '../src/engine/chain-triggers/watcher.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { deployToken, randomAddress } from './helpers/web3.ts';

/**
 * Chain triggers share the node they poll and the poll's time. One tenant
 * holding many Event workflows must not delay another tenant's trigger: a
 * poll reads at most WATCHES_PER_ORG_PER_POLL watches of one organization
 * per chain (those furthest behind first), and the rest catch up on later
 * polls. The watcher's timer is set far out; the test drives each poll.
 */

let chain: TestChain;
let gw: TestGateway;
let token: Address;
let keyB: string;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_CHAIN_TRIGGER_POLL_MS: '3600000', FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_RPC_URL_31337: chain.url } });
  token = await deployToken(chain, chain.account(1).address, 1_000_000n);
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

async function watchTransfers(key: string, name: string): Promise<string> {
  const res = await fetchJson(`${gw.url}/api/workflows/create`, {
    method: 'POST',
    key,
    body: JSON.stringify({
      name,
      nodes: [
        {
          id: 't',
          type: 'trigger',
          data: {
            label: 'Watch',
            config: { triggerType: 'Event', network: '31337', contractAddress: token, contractABI: JSON.stringify(erc20Abi), eventName: 'Transfer' },
          },
        },
      ],
      edges: [],
    }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const runCount = async (key: string, workflowId: string) =>
  ((await fetchJson(`${gw.url}/api/workflows/${workflowId}/executions`, { key })).body as unknown[]).length;

describe('chain triggers: fair share of each poll', () => {
  test("a tenant with more Event workflows than a poll's share does not hold back another tenant's; its own catch up on the next poll", async () => {
    const many = WATCHES_PER_ORG_PER_POLL + 5;
    const flooding: string[] = [];
    for (let i = 0; i < many; i++) flooding.push(await watchTransfers(gw.ownerKey, `A ${i}`));
    const quiet = await watchTransfers(keyB, 'B');

    const hash = await chain.walletClient(1).writeContract({
      address: token,
      abi: testUsdcAbi,
      functionName: 'transfer',
      args: [randomAddress(), 1n],
      account: chain.account(1),
      chain: chain.chain,
    });
    await chain.publicClient.waitForTransactionReceipt({ hash });

    const { chainTriggers } = gw.gateway.services.engine;
    await chainTriggers.tick();
    // Tenant B's one workflow fired on the first poll; tenant A had only its share read.
    expect(await runCount(keyB, quiet)).toBe(1);
    const firedFirst = await Promise.all(flooding.map((id) => runCount(gw.ownerKey, id)));
    expect(firedFirst.filter((n) => n === 1)).toHaveLength(WATCHES_PER_ORG_PER_POLL);
    expect(firedFirst.filter((n) => n === 0)).toHaveLength(5);

    // The next poll takes the ones left behind first: every workflow has fired once, none twice.
    await chainTriggers.tick();
    expect(await Promise.all(flooding.map((id) => runCount(gw.ownerKey, id)))).toEqual(flooding.map(() => 1));
    expect(await runCount(keyB, quiet)).toBe(1);
  }, 120_000);
});
