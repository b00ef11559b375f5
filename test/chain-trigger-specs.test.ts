import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { erc20Abi, type Address } from 'viem';
import { testUsdcAbi } from '../src/chains/devnet/test-usdc.ts';
import { MAX_EVENT_OVERLOADS, MAX_WATCHED_EVENTS_CHARS } from '../src/engine/chain-triggers/trigger-spec.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { deployToken, randomAddress } from './helpers/web3.ts';

/**
 * What an Event trigger keeps for the watcher. Its event fragments are read
 * whenever the trigger is polled, so a save is refused past
 * MAX_EVENT_OVERLOADS overloads of the event name or MAX_WATCHED_EVENTS_CHARS
 * of fragments, the same over REST and MCP; within the bounds, overloads still
 * decode. A trigger saved before fragments were stored compacted keeps its
 * place in the chain when saved again. The watcher's timer is set far out;
 * the test drives each poll.
 */

let chain: TestChain;
let gw: TestGateway;
let token: Address;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_CHAIN_TRIGGER_POLL_MS: '3600000', FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_RPC_URL_31337: chain.url } });
  token = await deployToken(chain, chain.account(1).address, 1_000_000n);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

const transferEvent = erc20Abi.find((item) => item.type === 'event' && item.name === 'Transfer')!;

/** `count` further overloads of Transfer: one more bytesN argument each, never emitted by the token. */
const overloads = (count: number, nameChars = 1) =>
  Array.from({ length: count }, (_, i) => ({
    type: 'event',
    name: 'Transfer',
    anonymous: false,
    inputs: Array.from({ length: i + 1 }, (_, j) => ({ name: `p${j}`.padEnd(nameChars, 'x'), type: `bytes${(j % 32) + 1}`, indexed: false })),
  }));

const graph = (abi: unknown[]) => ({
  nodes: [
    {
      id: 'watch',
      type: 'trigger',
      data: {
        label: 'Watch',
        config: { triggerType: 'Event', network: '31337', contractAddress: token, contractABI: JSON.stringify(abi), eventName: 'Transfer' },
      },
    },
  ],
  edges: [],
});

const create = (abi: unknown[]) =>
  fetchJson(`${gw.url}/api/workflows/create`, { method: 'POST', key: gw.ownerKey, body: JSON.stringify({ name: 'watch', ...graph(abi) }) });

async function transfer(to: Address, units: bigint) {
  const hash = await chain
    .walletClient(1)
    .writeContract({ address: token, abi: testUsdcAbi, functionName: 'transfer', args: [to, units], account: chain.account(1), chain: chain.chain });
  await chain.publicClient.waitForTransactionReceipt({ hash });
  return hash;
}

const runs = async (workflowId: string) => (await fetchJson(`${gw.url}/api/workflows/${workflowId}/executions`, { key: gw.ownerKey })).body as any[];

describe('Event trigger bounds', () => {
  test('more overloads of the event name than a trigger watches, or too large fragments, are a 400 naming the node and field, the same over REST and MCP', async () => {
    const tooMany = [...erc20Abi, ...overloads(MAX_EVENT_OVERLOADS)];
    const rest = await create(tooMany);
    expect(rest.status).toBe(400);
    expect(rest.body.code).toBe('invalid_workflow');
    const field = rest.body.invalidFields.find((f: any) => f.path === 'nodes[0].data.config.eventName');
    expect(field).toMatchObject({ nodeId: 'watch', code: 'too_many_event_overloads', received: 'Transfer' });
    expect(field.message).toContain(`${MAX_EVENT_OVERLOADS + 1} events named "Transfer"`);

    const mcp = await connectMcp(gw.url, gw.ownerKey);
    try {
      const overMcp = await callTool(mcp, 'create_workflow', { name: 'watch', ...graph(tooMany) });
      expect(overMcp.isError).toBe(true);
      expect(overMcp.body).toMatchObject({ code: 'invalid_workflow', invalidFields: rest.body.invalidFields });

      // Few overloads, but fragments padded past the bound: named by contractABI.
      const tooLarge = [...erc20Abi, ...overloads(2, MAX_WATCHED_EVENTS_CHARS)];
      const large = await create(tooLarge);
      expect(large.status).toBe(400);
      expect(large.body.invalidFields.find((f: any) => f.path === 'nodes[0].data.config.contractABI')).toMatchObject({
        nodeId: 'watch',
        code: 'event_abi_too_large',
      });
      const largeOverMcp = await callTool(mcp, 'create_workflow', { name: 'watch', ...graph(tooLarge) });
      expect(largeOverMcp.body).toMatchObject({ code: 'invalid_workflow', invalidFields: large.body.invalidFields });
    } finally {
      await mcp.close();
    }
    // Nothing was saved.
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey })).body).toHaveLength(0);
  });

  test('at the bound, the overload the contract emits still fires with its decoded arguments', async () => {
    const created = await create([...erc20Abi, ...overloads(MAX_EVENT_OVERLOADS - 1)]);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const to = randomAddress();
    const hash = await transfer(to, 42n);
    await gw.gateway.services.engine.chainTriggers.tick();
    const list = await runs(created.body.id);
    expect(list).toHaveLength(1);
    expect(list[0].input).toMatchObject({ eventName: 'Transfer', transactionHash: hash, args: { from: chain.account(1).address, to, value: '42' } });
    await fetchJson(`${gw.url}/api/workflows/${created.body.id}?force=true`, { method: 'DELETE', key: gw.ownerKey });
  });

  test('a trigger stored before fragments were compacted keeps its place when the workflow is saved again: a log mined before that save still runs', async () => {
    const created = await create([...erc20Abi]);
    expect(created.status).toBe(200);
    const workflowId = created.body.id;
    const { store } = gw.gateway.services;
    // The row as an older gateway wrote it: the ABI's fragment whole (internalType and all).
    const row = await store.selectFrom('chain_trigger_cursors').select('spec').where('workflow_id', '=', workflowId).executeTakeFirstOrThrow();
    const legacy = { ...JSON.parse(row.spec), events: [{ ...transferEvent, inputs: transferEvent.inputs.map((i) => ({ ...i, internalType: i.type })) }] };
    await store
      .updateTable('chain_trigger_cursors')
      .set({ spec: JSON.stringify(legacy) })
      .where('workflow_id', '=', workflowId)
      .execute();

    const hash = await transfer(randomAddress(), 5n);
    const renamed = await fetchJson(`${gw.url}/api/workflows/${workflowId}`, { method: 'PATCH', key: gw.ownerKey, body: JSON.stringify({ name: 'renamed' }) });
    expect(renamed.status).toBe(200);
    await gw.gateway.services.engine.chainTriggers.tick();
    expect((await runs(workflowId)).map((r) => r.input.transactionHash)).toEqual([hash]);
  });
});
