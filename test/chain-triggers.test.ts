import net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { erc20Abi, getAddress, parseEther, type Address, type Hex } from 'viem';
import { testUsdcAbi } from '../src/chains/devnet/test-usdc.ts';
import { createChainTriggerWatcher } from '../src/engine/chain-triggers/watcher.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { spawnGateway } from './helpers/instances.ts';
import { deployToken, randomAddress } from './helpers/web3.ts';

/**
 * Event, Block and Transfer triggers end to end: a real gateway polls a real
 * anvil, workflows are created over REST, the chain is driven with real
 * transactions and mined blocks, and the runs are read back from the
 * executions API. Chain 31337 has no explorer; chain 8453 (a second anvil
 * behind a TCP proxy the test can cut) has one, so its Event runs carry links.
 * No timing thresholds: every wait polls until the expected state, with a
 * generous deadline.
 */

const POLL = { FLOWGATE_CHAIN_TRIGGER_POLL_MS: '150', FLOWGATE_RATE_LIMITS: 'off' };
const DEADLINE_MS = 45_000;

let chain: TestChain;
let base: TestChain;
let baseProxy: Proxy;
let gw: TestGateway;
let token: Address;
let baseToken: Address;
const holder = () => chain.account(1);

// ---------------------------------------------------------------------------
// Helpers

/** A TCP proxy in front of an RPC node whose listening socket (and open connections) can be cut and restored on the same port. */
interface Proxy {
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
}

async function startProxy(target: number): Promise<Proxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    restore: () => listen(port),
  };
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const graphOf = (config: Record<string, unknown>) => ({
  nodes: [
    { id: 't', type: 'trigger', data: { label: 'Watch', config } },
    { id: 'sum', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } },
  ],
  edges: [{ id: 'e1', source: 't', target: 'sum' }],
});

async function createWatch(g: TestGateway, config: Record<string, unknown>): Promise<string> {
  const res = await fetchJson(`${g.url}/api/workflows/create`, {
    method: 'POST',
    key: g.ownerKey,
    body: JSON.stringify({ name: `watch ${config.triggerType}`, ...graphOf(config) }),
  });
  if (res.status !== 200) throw new Error(`create failed ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

async function setEnabled(g: TestGateway, workflowId: string, enabled: boolean) {
  const res = await fetchJson(`${g.url}/api/workflows/${workflowId}`, { method: 'PATCH', key: g.ownerKey, body: JSON.stringify({ enabled }) });
  expect(res.status).toBe(200);
}

async function remove(g: TestGateway, workflowId: string) {
  const res = await fetchJson(`${g.url}/api/workflows/${workflowId}?force=true`, { method: 'DELETE', key: g.ownerKey });
  expect(res.status).toBe(200);
}

interface Run {
  id: string;
  status: string;
  triggerType: string;
  input: Record<string, any>;
}

async function runs(g: TestGateway, workflowId: string): Promise<Run[]> {
  const res = await fetchJson(`${g.url}/api/workflows/${workflowId}/executions`, { key: g.ownerKey });
  if (res.status !== 200) throw new Error(`list executions failed ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

const finished = (list: Run[]) => list.every((r) => !['pending', 'running'].includes(r.status));

/** Waits until the workflow has `count` finished runs. */
const runsSettled = (g: TestGateway, workflowId: string, count: number) =>
  until(
    `${count} finished runs of ${workflowId}`,
    () => runs(g, workflowId),
    (list) => list.length >= count && finished(list),
  );

/** The trigger node's logged output of a run. */
async function triggerOutput(g: TestGateway, executionId: string): Promise<Record<string, any>> {
  const res = await fetchJson(`${g.url}/api/workflows/executions/${executionId}/details`, { key: g.ownerKey });
  return res.body.logs.find((l: any) => l.nodeId === 't').output;
}

/** The last block the watcher has processed for a workflow (the gateway's own record). */
const cursorOf = async (g: TestGateway, workflowId: string) =>
  (await g.gateway.services.store.selectFrom('chain_trigger_cursors').select('last_block').where('workflow_id', '=', workflowId).executeTakeFirst())
    ?.last_block;

/** Waits until the watcher has processed block `block` for the workflow. */
const caughtUp = (g: TestGateway, workflowId: string, block: bigint | number) =>
  until(
    `cursor of ${workflowId} at ${block}`,
    () => cursorOf(g, workflowId),
    (last) => typeof last === 'number' && last >= Number(block),
  );

const head = async (c: TestChain = chain) => Number(await c.publicClient.getBlockNumber({ cacheTime: 0 }));

async function mined(c: TestChain, hash: Hex): Promise<bigint> {
  return (await c.publicClient.waitForTransactionReceipt({ hash })).blockNumber;
}

async function sendToken(c: TestChain, from: number, address: Address, to: Address, units: bigint) {
  const hash = await c
    .walletClient(from)
    .writeContract({ address, abi: testUsdcAbi, functionName: 'transfer', args: [to, units], account: c.account(from), chain: c.chain });
  return { hash, block: await mined(c, hash) };
}

async function sendEth(from: number, to: Address, value: bigint) {
  const hash = await chain.walletClient(from).sendTransaction({ to, value, account: chain.account(from), chain: chain.chain });
  return { hash, block: await mined(chain, hash) };
}

const eventConfig = (address: Address, network = '31337') => ({
  triggerType: 'Event',
  network,
  contractAddress: address,
  contractABI: JSON.stringify(erc20Abi),
  eventName: 'Transfer',
});

beforeAll(async () => {
  [chain, base] = await Promise.all([startTestChain(31337), startTestChain(8453)]);
  baseProxy = await startProxy(base.port);
  gw = await startTestGateway({ env: { ...POLL, FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RPC_URL_8453: baseProxy.url } });
  [token, baseToken] = await Promise.all([deployToken(chain, holder().address, 1_000_000_000n), deployToken(base, base.account(1).address, 1_000_000_000n)]);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([chain?.stop(), base?.stop()]);
});

// ---------------------------------------------------------------------------

describe('Event trigger', () => {
  test('one run per matching log after the save, with the decoded log as trigger output; history is not replayed', async () => {
    const before = await sendToken(chain, 1, token, randomAddress(), 7n); // mined before the workflow exists
    const workflowId = await createWatch(gw, eventConfig(token));
    const to = randomAddress();
    const first = await sendToken(chain, 1, token, to, 1_000_000n);
    const approve = await chain
      .walletClient(1)
      .writeContract({ address: token, abi: testUsdcAbi, functionName: 'approve', args: [to, 5n], account: holder(), chain: chain.chain });
    await mined(chain, approve); // an Approval log of the same contract: not the watched event
    const second = await sendToken(chain, 1, token, holder().address, 2n);
    await caughtUp(gw, workflowId, second.block);

    const list = await runsSettled(gw, workflowId, 2);
    expect(list).toHaveLength(2);
    expect(list.map((r) => r.input.transactionHash).sort()).toEqual([first.hash, second.hash].sort());
    expect(list.map((r) => r.input.transactionHash)).not.toContain(before.hash);
    expect(list.every((r) => r.status === 'success' && r.triggerType === 'Event')).toBe(true);

    const run = list.find((r) => r.input.transactionHash === first.hash)!;
    const output = await triggerOutput(gw, run.id);
    expect(output.success).toBe(true);
    expect(output.data).toMatchObject({
      triggered: true,
      eventName: 'Transfer',
      args: { from: holder().address, to, value: '1000000' },
      blockNumber: Number(first.block),
      transactionHash: first.hash,
      address: getAddress(token),
    });
    expect(typeof output.data.logIndex).toBe('number');
    expect(typeof output.data.triggeredAt).toBe('string');
    expect(typeof output.data.timestamp).toBe('number');
    // Chain 31337 has no explorer: no links rather than empty ones.
    expect(output.data).not.toHaveProperty('transactionLink');
    expect(output.data).not.toHaveProperty('addressLink');
    await remove(gw, workflowId);
  }, 90_000);
});

describe('Block trigger', () => {
  test('a run for every block whose number is a multiple of blockInterval; a disabled workflow does not fire and restarts at the head when enabled', async () => {
    const workflowId = await createWatch(gw, { triggerType: 'Block', network: '31337', blockInterval: 3 });
    const start = (await cursorOf(gw, workflowId))!;
    expect(start).toBe(await head());
    await chain.testClient.mine({ blocks: 7 });
    await caughtUp(gw, workflowId, start + 7);
    const expected = [1, 2, 3, 4, 5, 6, 7].map((i) => start + i).filter((n) => n % 3 === 0);
    let list = await runsSettled(gw, workflowId, expected.length);
    expect(list.map((r) => r.input.blockNumber).sort((a, b) => a - b)).toEqual(expected);
    expect(list.every((r) => r.status === 'success' && r.triggerType === 'Block')).toBe(true);

    const n = expected[0];
    const block = await chain.publicClient.getBlock({ blockNumber: BigInt(n) });
    const output = await triggerOutput(gw, list.find((r) => r.input.blockNumber === n)!.id);
    expect(output.data).toMatchObject({
      triggered: true,
      blockNumber: n,
      blockHash: block.hash,
      blockTimestamp: Number(block.timestamp),
      parentHash: block.parentHash,
    });

    // Disabled: blocks mined now never fire, not even later. A sentinel on every block proves the watcher polled past them.
    await setEnabled(gw, workflowId, false);
    expect(await cursorOf(gw, workflowId)).toBeUndefined();
    const sentinel = await createWatch(gw, { triggerType: 'Block', network: '31337', blockInterval: 1 });
    await chain.testClient.mine({ blocks: 6 });
    const last = await head();
    await until(
      'the sentinel ran for the last block',
      () => runs(gw, sentinel),
      (l) => l.some((r) => r.input.blockNumber === last),
    );
    expect((await runs(gw, workflowId)).length).toBe(expected.length);

    // Enabled again: starts at the head (the disabled stretch is not replayed); three new blocks hold exactly one multiple of 3.
    await setEnabled(gw, workflowId, true);
    const resumed = (await cursorOf(gw, workflowId))!;
    expect(resumed).toBe(last);
    await chain.testClient.mine({ blocks: 3 });
    await caughtUp(gw, workflowId, resumed + 3);
    list = await runsSettled(gw, workflowId, expected.length + 1);
    expect(list).toHaveLength(expected.length + 1);
    expect(list.map((r) => r.input.blockNumber).filter((b) => b > resumed)).toEqual([[1, 2, 3].map((i) => resumed + i).find((b) => b % 3 === 0)]);
    await remove(gw, sentinel);
    await remove(gw, workflowId);
  }, 90_000);
});

describe('Transfer trigger', () => {
  test('native: value sent from or to the address fires; zero-value and unrelated transfers do not', async () => {
    const watched = chain.account(3).address;
    const workflowId = await createWatch(gw, { triggerType: 'Transfer', network: 'flowgate-devnet', address: watched.toLowerCase() });
    const out = randomAddress();
    const sent = await sendEth(3, out, parseEther('0.5'));
    const received = await sendEth(4, watched, parseEther('0.25'));
    await sendEth(4, watched, 0n);
    const unrelated = await sendEth(4, randomAddress(), parseEther('1'));
    await caughtUp(gw, workflowId, unrelated.block);

    const list = await runsSettled(gw, workflowId, 2);
    expect(list).toHaveLength(2);
    expect(list.every((r) => r.status === 'success' && r.triggerType === 'Transfer')).toBe(true);
    const byHash = Object.fromEntries(list.map((r) => [r.input.transactionHash, r]));
    expect((await triggerOutput(gw, byHash[sent.hash].id)).data).toMatchObject({
      from: watched,
      to: out,
      value: parseEther('0.5').toString(),
      token: 'native',
      transactionHash: sent.hash,
    });
    expect(byHash[received.hash].input).toEqual({
      from: chain.account(4).address,
      to: watched,
      value: parseEther('0.25').toString(),
      token: 'native',
      transactionHash: received.hash,
    });
    await remove(gw, workflowId);
  }, 90_000);

  test('ERC-20: Transfer logs of the token from or to the address fire; other tokens, other parties and native value do not', async () => {
    const watched = chain.account(6).address;
    const workflowId = await createWatch(gw, { triggerType: 'Transfer', network: '31337', address: watched, tokenAddress: token });
    const other = randomAddress();
    const incoming = await sendToken(chain, 1, token, watched, 10n);
    const outgoing = await sendToken(chain, 6, token, other, 3n);
    await sendEth(4, watched, parseEther('0.1'));
    await sendToken(chain, 1, token, randomAddress(), 4n);
    const unrelated = await sendToken(base, 1, baseToken, watched, 1n); // same address, other chain
    const last = await sendToken(chain, 1, token, randomAddress(), 1n);
    expect(unrelated.hash).toBeTruthy();
    await caughtUp(gw, workflowId, last.block);

    const list = await runsSettled(gw, workflowId, 2);
    expect(list).toHaveLength(2);
    const byHash = Object.fromEntries(list.map((r) => [r.input.transactionHash, r.input]));
    expect(byHash[incoming.hash]).toEqual({ from: holder().address, to: watched, value: '10', token: getAddress(token), transactionHash: incoming.hash });
    expect(byHash[outgoing.hash]).toEqual({ from: watched, to: other, value: '3', token: getAddress(token), transactionHash: outgoing.hash });
    const output = await triggerOutput(gw, list[0].id);
    expect(output).toMatchObject({ success: true, data: { triggered: true, token: getAddress(token) } });
    await remove(gw, workflowId);
  }, 90_000);
});

describe('save-time checks', () => {
  const invalid = async (config: Record<string, unknown>) => {
    const res = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      key: gw.ownerKey,
      body: JSON.stringify({ name: 'bad', ...graphOf(config) }),
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_workflow');
    return res.body.invalidFields as any[];
  };
  const field = (fields: any[], name: string) => fields.find((f) => f.path === `nodes[0].data.config.${name}`);

  test('unknown network, bad addresses, an ABI without the event and a bad blockInterval are 400s naming the node and field', async () => {
    let fields = await invalid({ ...eventConfig(token), network: 'basee' });
    expect(field(fields, 'network')).toMatchObject({ nodeId: 't', code: 'unsupported_chain', suggestion: 'base' });

    fields = await invalid({ ...eventConfig(token), contractAddress: '0x1234' });
    expect(field(fields, 'contractAddress')).toMatchObject({ nodeId: 't', code: 'invalid_address' });

    const badChecksum = getAddress(token).replace(/[a-f]/, (c) => c.toUpperCase());
    if (badChecksum !== getAddress(token)) {
      fields = await invalid({ ...eventConfig(token), contractAddress: badChecksum });
      expect(field(fields, 'contractAddress').message).toMatch(/checksum/);
    }

    fields = await invalid({ ...eventConfig(token), eventName: 'Transfr' });
    expect(field(fields, 'eventName')).toMatchObject({ nodeId: 't', code: 'unknown_abi_event', suggestion: 'Transfer' });

    for (const blockInterval of [0, -2, '1.5', 2.5]) {
      fields = await invalid({ triggerType: 'Block', network: '31337', blockInterval });
      expect(field(fields, 'blockInterval')).toMatchObject({ nodeId: 't', code: 'invalid_block_interval' });
    }

    fields = await invalid({ triggerType: 'Transfer', network: '31337', address: chain.account(3).address, tokenAddress: 'usdc' });
    expect(field(fields, 'tokenAddress')).toMatchObject({ nodeId: 't', code: 'invalid_address' });

    fields = await invalid({ triggerType: 'Block', network: '{{@__system:System.unixTimestamp}}', blockInterval: 1 });
    expect(field(fields, 'network')).toMatchObject({ code: 'template_not_allowed' });

    // validate_workflow reports the same without saving.
    const report = await fetchJson(`${gw.url}/api/workflows/validate`, {
      method: 'POST',
      key: gw.ownerKey,
      body: JSON.stringify(graphOf({ triggerType: 'Block', network: 'basee', blockInterval: 0 })),
    });
    expect(report.status).toBe(200);
    expect(report.body.valid).toBe(false);
    expect(report.body.errors.map((e: any) => e.code).sort()).toEqual(['invalid_block_interval', 'unsupported_chain']);
  });
});

describe('RPC outage', () => {
  test('a chain whose RPC is down neither crashes the gateway nor stalls other chains; its missed logs fire once it is back', async () => {
    const baseWatch = await createWatch(gw, eventConfig(baseToken, '8453'));
    const first = await sendToken(base, 1, baseToken, randomAddress(), 11n);
    let list = await runsSettled(gw, baseWatch, 1);
    const output = await triggerOutput(gw, list[0].id);
    // Chain 8453 has an explorer: the run carries links.
    expect(output.data).toMatchObject({
      transactionHash: first.hash,
      transactionLink: `https://basescan.org/tx/${first.hash}`,
      addressLink: `https://basescan.org/address/${getAddress(baseToken)}`,
    });

    await baseProxy.cut();
    const sentinel = await createWatch(gw, { triggerType: 'Block', network: '31337', blockInterval: 1 });
    const duringOutage = await sendToken(base, 1, baseToken, randomAddress(), 12n); // anvil itself is up; the gateway cannot reach it
    await chain.testClient.mine({ blocks: 2 });
    const last = await head();
    await until(
      'chain 31337 keeps firing',
      () => runs(gw, sentinel),
      (l) => l.some((r) => r.input.blockNumber === last),
    );
    expect((await fetchJson(`${gw.url}/healthz`)).status).toBe(200);
    expect((await runs(gw, baseWatch)).length).toBe(1);

    await baseProxy.restore();
    list = await runsSettled(gw, baseWatch, 2);
    await caughtUp(gw, baseWatch, duringOutage.block);
    list = await runs(gw, baseWatch);
    expect(list.map((r) => r.input.transactionHash).sort()).toEqual([first.hash, duringOutage.hash].sort());
    await remove(gw, sentinel);
    await remove(gw, baseWatch);
  }, 90_000);
});

describe('exactly once', () => {
  const env = () => ({ ...POLL, FLOWGATE_RPC_URL_31337: chain.url });

  test('a restart resumes from the cursor: what was mined while down runs once, nothing twice', async () => {
    const dataDir = tempDir();
    let g = await startTestGateway({ env: env(), dataDir });
    const blocks = await createWatch(g, { triggerType: 'Block', network: '31337', blockInterval: 1 });
    const events = await createWatch(g, eventConfig(token));
    const start = (await cursorOf(g, blocks))!;
    const live = await sendToken(chain, 1, token, randomAddress(), 1n);
    await chain.testClient.mine({ blocks: 2 });
    await caughtUp(g, blocks, start + 3);
    await caughtUp(g, events, start + 3);
    await g.close();

    // Down: three plain blocks and two more logs.
    await chain.testClient.mine({ blocks: 3 });
    const missedA = await sendToken(chain, 1, token, randomAddress(), 2n);
    const missedB = await sendToken(chain, 1, token, randomAddress(), 3n);
    const end = await head();

    g = await startTestGateway({ env: env(), dataDir });
    await caughtUp(g, blocks, end);
    await caughtUp(g, events, end);
    const expected = Array.from({ length: end - start }, (_, i) => start + 1 + i);
    const blockRuns = await runsSettled(g, blocks, expected.length);
    expect(blockRuns.map((r) => r.input.blockNumber).sort((a, b) => a - b)).toEqual(expected);
    const eventRuns = await runsSettled(g, events, 3);
    expect(eventRuns.map((r) => r.input.transactionHash).sort()).toEqual([live.hash, missedA.hash, missedB.hash].sort());
    expect([...blockRuns, ...eventRuns].every((r) => r.status === 'success')).toBe(true);
    await remove(g, blocks);
    await remove(g, events);
    await g.close();
  }, 120_000);

  test('two gateway processes on one data directory never fire an occurrence twice', async () => {
    const dataDir = tempDir();
    const a = await startTestGateway({ env: env(), dataDir });
    // The second gateway is its own process (`flowgate serve`), as a second instance of a deployment would be.
    const other = await spawnGateway({ ...env(), FLOWGATE_CHAIN_TRIGGER_POLL_MS: '100' }, { dataDir });
    try {
      const blocks = await createWatch(a, { triggerType: 'Block', network: '31337', blockInterval: 1 });
      const events = await createWatch(a, eventConfig(token));
      const start = (await cursorOf(a, blocks))!;
      const rival = createChainTriggerWatcher(a.gateway.services, () => {}, 60_000);
      const hashes: Hex[] = [];
      for (let i = 0; i < 3; i++) {
        await chain.testClient.mine({ blocks: 2 });
        hashes.push((await sendToken(chain, 1, token, randomAddress(), BigInt(i + 1))).hash);
        // Both processes poll on their own timers; here two more watchers on this process's store also poll the same range at once.
        await Promise.all([a.gateway.services.engine.chainTriggers.tick(), rival.tick()]);
      }
      const end = await head();
      await caughtUp(a, blocks, end);
      await caughtUp(a, events, end);
      const expected = Array.from({ length: end - start }, (_, i) => start + 1 + i);
      const blockRuns = await runsSettled(a, blocks, expected.length);
      expect(blockRuns.map((r) => r.input.blockNumber).sort((x, y) => x - y)).toEqual(expected);
      const eventRuns = await runsSettled(a, events, hashes.length);
      expect(eventRuns.map((r) => r.input.transactionHash).sort()).toEqual([...hashes].sort());
      expect([...blockRuns, ...eventRuns].every((r) => r.status === 'success')).toBe(true);
      await remove(a, blocks);
      await remove(a, events);
    } finally {
      await other.stop();
      await a.close();
    }
  }, 120_000);
});
