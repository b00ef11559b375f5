import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { erc20Abi, getAddress, type Address, type Hex } from 'viem';
import { testUsdcAbi } from '../src/chains/devnet/test-usdc.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { CREDENTIALS, discordWebhookUrl, startProviderServers, type ProviderServers } from './helpers/providers.ts';
import { action, deployToken, linear, randomAddress, runWorkflow } from './helpers/web3.ts';

/**
 * "Watch the chain, then tell me" on a real anvil: `web3/query-events` reads
 * a range through an RPC front that refuses eth_getLogs over 10 blocks (as
 * hosted RPCs cap ranges), and an Event trigger → Condition → Discord and
 * e-mail workflow delivers one message to each local provider server.
 */

const MAX_LOG_RANGE = 10n;

let chain: TestChain;
let rpc: { url: string; getLogs: { from: bigint; to: bigint; refused: boolean }[]; close(): Promise<void> };
let gw: TestGateway;
let fakes: ProviderServers;
let token: Address;
const holder = () => chain.account(1);
const api = (p: string, init: RequestInit = {}) => fetchJson(`${gw.url}${p}`, { key: gw.ownerKey, ...init });

/** A JSON-RPC front for anvil that answers eth_getLogs over MAX_LOG_RANGE blocks with the error hosted RPCs give. */
async function startCappedRpc(target: string) {
  const getLogs: { from: bigint; to: bigint; refused: boolean }[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      // The gateway batches JSON-RPC calls: answer each one, refusing the too-wide getLogs ones.
      const parsed = JSON.parse(raw);
      const calls: any[] = Array.isArray(parsed) ? parsed : [parsed];
      const answers = await Promise.all(
        calls.map(async (call) => {
          if (call.method === 'eth_getLogs') {
            const { fromBlock, toBlock } = call.params[0];
            const from = BigInt(fromBlock);
            const to = BigInt(toBlock);
            const refused = to - from + 1n > MAX_LOG_RANGE;
            getLogs.push({ from, to, refused });
            if (refused) return { jsonrpc: '2.0', id: call.id, error: { code: -32600, message: `eth_getLogs is limited to a ${MAX_LOG_RANGE} block range` } };
          }
          const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) });
          return upstream.json();
        }),
      );
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    getLogs,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function transfer(to: Address, units: bigint): Promise<{ hash: Hex; block: bigint }> {
  const hash = await chain
    .walletClient(1)
    .writeContract({ address: token, abi: testUsdcAbi, functionName: 'transfer', args: [to, units], account: holder(), chain: chain.chain });
  return { hash, block: (await chain.publicClient.waitForTransactionReceipt({ hash })).blockNumber };
}

beforeAll(async () => {
  [chain, fakes] = await Promise.all([startTestChain(31337), startProviderServers()]);
  rpc = await startCappedRpc(chain.url);
  gw = await startTestGateway({
    env: { FLOWGATE_RPC_URL_31337: rpc.url, FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1', FLOWGATE_CHAIN_TRIGGER_POLL_MS: '150' },
  });
  token = await deployToken(chain, holder().address, 1_000_000_000n);
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await rpc?.close();
  await fakes?.close();
  await chain?.stop();
});

const queryConfig = (extra: Record<string, unknown>) => ({
  actionType: 'web3/query-events',
  network: '31337',
  contractAddress: token,
  abi: JSON.stringify(erc20Abi),
  eventName: 'Transfer',
  ...extra,
});

describe('web3/query-events', () => {
  it('reads a 40-block range in pages the RPC accepts, halving after a refusal, and decodes every log in order', async () => {
    const to = randomAddress();
    const sent: { hash: Hex; block: bigint }[] = [];
    for (let i = 1; i <= 8; i++) {
      sent.push(await transfer(to, BigInt(i)));
      await chain.testClient.mine({ blocks: 4 });
    }
    const fromBlock = sent[0]!.block;
    const toBlock = sent.at(-1)!.block;
    expect(toBlock - fromBlock + 1n).toBeGreaterThan(MAX_LOG_RANGE * 2n);
    rpc.getLogs.length = 0;

    const run = await runWorkflow(
      gw,
      linear(action('q', 'Query', queryConfig({ fromBlock: String(fromBlock), toBlock: String(toBlock), eventArgs: JSON.stringify({ to }) }))),
    );
    expect(run.execution.status, JSON.stringify(run.step('q'))).toBe('success');
    // The log row shortens large outputs for agents; the run's result carries the step's whole output.
    const out = run.execution.output.result;
    expect(out.count).toBe(8);
    expect(out.events.map((e: any) => e.transactionHash)).toEqual(sent.map((s) => s.hash));
    expect(out.events[2]).toMatchObject({
      eventName: 'Transfer',
      args: { from: holder().address, to, value: '3' },
      blockNumber: Number(sent[2]!.block),
      address: getAddress(token),
    });
    expect(out).toMatchObject({ fromBlock: Number(fromBlock), toBlock: Number(toBlock) });
    expect(out.truncated).toBeUndefined();
    // The RPC refused the first, too-large pages; every accepted page was within its cap and together they cover the range.
    expect(rpc.getLogs.some((c) => c.refused)).toBe(true);
    const accepted = rpc.getLogs.filter((c) => !c.refused);
    expect(accepted.length).toBeGreaterThanOrEqual(4);
    expect(accepted[0]!.from).toBe(fromBlock);
    expect(accepted.at(-1)!.to).toBe(toBlock);
    for (let i = 1; i < accepted.length; i++) expect(accepted[i]!.from).toBe(accepted[i - 1]!.to + 1n);
  }, 60_000);

  it('blockCount reads the latest blocks; an indexed filter narrows to matching logs', async () => {
    const mine = randomAddress();
    const other = randomAddress();
    const a = await transfer(mine, 11n);
    await transfer(other, 12n);
    const run = await runWorkflow(gw, linear(action('q', 'Query', queryConfig({ blockCount: 5, eventArgs: JSON.stringify({ to: [mine] }) }))));
    const out = run.step('q').output;
    expect(out.events.map((e: any) => e.transactionHash)).toEqual([a.hash]);
  });

  it('bad config fails the step naming the field: a filter on a non-indexed parameter, no range', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ blockCount: 5, eventArgs: '{"value":"1"}' }, 'only filter indexed parameters'],
      [{}, 'fromBlock'],
    ];
    for (const [extra, message] of cases) {
      const run = await runWorkflow(gw, linear(action('q', 'Query', queryConfig(extra))));
      expect(run.execution.status).toBe('error');
      expect(run.step('q').error).toContain(message);
    }
  });
});

describe('Event trigger → Condition → Discord and e-mail', () => {
  it('a large transfer sends exactly one Discord message and one e-mail with the templates resolved; a small one sends nothing', async () => {
    const discord = await api('/api/integrations', {
      method: 'POST',
      body: JSON.stringify({ name: 'alerts', type: 'discord', config: { webhookUrl: discordWebhookUrl(), apiBaseUrl: fakes.discord.url } }),
    });
    const resend = await api('/api/integrations', {
      method: 'POST',
      body: JSON.stringify({
        name: 'mail',
        type: 'resend',
        config: { apiKey: CREDENTIALS.resend, fromEmail: 'alerts@example.com', apiBaseUrl: fakes.resend.url },
      }),
    });
    expect([discord.status, resend.status]).toEqual([201, 201]);
    const watch = 'Watch';
    const graph = {
      nodes: [
        {
          id: 't',
          type: 'trigger',
          data: {
            label: watch,
            config: { triggerType: 'Event', network: '31337', contractAddress: token, contractABI: JSON.stringify(erc20Abi), eventName: 'Transfer' },
          },
        },
        action('big', 'Is it big', { actionType: 'Condition', condition: 'Number({{@t:Watch.args.value}}) >= 1000000' }),
        action('chat', 'Tell Discord', {
          actionType: 'discord/send-message',
          integrationId: discord.body.id,
          message: 'Large transfer of {{@t:Watch.args.value}} to {{@t:Watch.args.to}} in block {{@t:Watch.blockNumber}}',
        }),
        action('mail', 'Mail me', {
          actionType: 'resend/send-email',
          integrationId: resend.body.id,
          emailTo: 'ops@example.org',
          emailSubject: 'Transfer {{@t:Watch.transactionHash}}',
          emailBody: 'Value {{@t:Watch.args.value}}',
        }),
      ],
      edges: [
        { id: 'e0', source: 't', target: 'big' },
        { id: 'e1', source: 'big', target: 'chat', sourceHandle: 'true' },
        { id: 'e2', source: 'big', target: 'mail', sourceHandle: 'true' },
      ],
    };
    const created = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Whale alert', ...graph }) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const workflowId = created.body.id as string;
    fakes.discord.received.length = 0;
    fakes.resend.received.length = 0;

    const whale = randomAddress();
    await transfer(randomAddress(), 5n); // small: the Condition is false
    const big = await transfer(whale, 2_000_000n);

    const deadline = Date.now() + 45_000;
    let runs: any[] = [];
    while (Date.now() < deadline) {
      runs = (await api(`/api/workflows/${workflowId}/executions`)).body;
      if (runs.length >= 2 && runs.every((r) => !['pending', 'running'].includes(r.status))) break;
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(runs).toHaveLength(2);
    expect(
      runs.every((r) => r.status === 'success'),
      JSON.stringify(runs),
    ).toBe(true);

    expect(fakes.discord.received).toHaveLength(1);
    expect(fakes.discord.received[0]!.body.content).toBe(`Large transfer of 2000000 to ${whale} in block ${big.block}`);
    expect(fakes.resend.received).toHaveLength(1);
    expect(fakes.resend.received[0]!.body).toMatchObject({ to: ['ops@example.org'], subject: `Transfer ${big.hash}`, text: 'Value 2000000' });
    await api(`/api/workflows/${workflowId}?force=true`, { method: 'DELETE' });
  }, 90_000);
});
