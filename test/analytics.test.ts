import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { newId, newSortableId } from '../src/ids.ts';
import { migrate } from '../src/store/db.ts';
import { summary as summaryOf, networks as networksOf } from '../src/analytics/aggregates.ts';
import { resolveWindow } from '../src/analytics/range.ts';
import { createChainCatalog } from '../src/chains/catalog.ts';
import { loadConfig } from '../src/config.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, openTestStore, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { insertWorkflow } from './helpers/org-fixtures.ts';
import { addMember, newSignedInUser, type SignedInUser } from './helpers/members.ts';
import { browserClient, signIn, type BrowserClient } from './helpers/session.ts';
import { action, linear, randomAddress, runWorkflow } from './helpers/web3.ts';

/**
 * SPEC "Analytics" over the real gateway: workflow runs on the engine, a
 * direct transfer and a workflow transfer on a real anvil, keys and a
 * signed-in browser session, the MCP SDK client, and eventsource-parser as
 * the SSE client of the stream.
 */

let chain: TestChain;
let gw: TestGateway;
let readKey: string;
let session: BrowserClient;
let stranger: SignedInUser;
let organizationId: string;

const runs = { ok: [] as string[], failed: '', onchain: '', direct: '' };
let directGas = '';
let workflowGas = 0n;

const get = (path: string, key: string | undefined = gw.ownerKey) => fetchJson(`${gw.url}${path}`, { key });

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RATE_LIMITS: 'off' } });
  readKey = await gw.createKey({ scope: 'mcp:read' });
  organizationId = (await gw.gateway.services.organizations.ensure('default')).organization.id;

  // A member of the default organization, signed in with a wallet: the session caller.
  const member = privateKeyToAccount(generatePrivateKey());
  await addMember(gw, organizationId, member, 'member');
  session = browserClient(gw.url);
  await signIn(session, gw.url, member);
  // Someone else, with an organization of its own.
  stranger = await newSignedInUser(gw);

  const sumGraph = linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[1,2]' }));
  for (let i = 0; i < 2; i++) runs.ok.push((await runWorkflow(gw, sumGraph)).executionId);
  const failing = await runWorkflow(gw, linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '{{@t:Start.missing}}' })));
  expect(failing.execution.status).toBe('error');
  runs.failed = failing.executionId;
  const onchain = await runWorkflow(
    gw,
    linear(action('send', 'Send ETH', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.001', recipientAddress: randomAddress() })),
  );
  expect(onchain.execution.status).toBe('success');
  runs.onchain = onchain.executionId;
  runs.ok.push(onchain.executionId);
  workflowGas = BigInt(onchain.execution.gasUsedWei);

  const transfer = await fetchJson(`${gw.url}/api/execute/transfer`, {
    method: 'POST',
    key: gw.ownerKey,
    body: JSON.stringify({ chainId: 31337, recipientAddress: randomAddress(), amount: '0.002' }),
  });
  expect(transfer.status).toBe(202);
  runs.direct = transfer.body.executionId;
  directGas = transfer.body.gasUsedWei;
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

describe('summary, time series, networks', () => {
  test('summary counts workflow and direct runs together, with exact gas as a decimal string', async () => {
    const res = await get('/api/analytics/summary?range=24h');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ totalRuns: 5, successfulRuns: 4, failedRuns: 1, successRate: 80 });
    expect(res.body.totalGasUsedWei).toBe((BigInt(directGas) + workflowGas).toString());
    expect(workflowGas).toBeGreaterThan(0n);
    expect(res.body.avgExecutionTimeMs).toBeGreaterThanOrEqual(0);
    // The default range is 30d and holds the same runs.
    expect((await get('/api/analytics/summary')).body.totalRuns).toBe(5);
  });

  test('time series: every bucket of the range, aligned, adding up to the summary', async () => {
    const day = await get('/api/analytics/time-series?range=24h');
    expect(day.status).toBe(200);
    const buckets = day.body.buckets as { timestamp: string; runCount: number; successCount: number; failedCount: number }[];
    expect(buckets.length).toBeGreaterThanOrEqual(24);
    expect(buckets.length).toBeLessThanOrEqual(25);
    for (const [i, b] of buckets.entries()) {
      expect(Date.parse(b.timestamp) % 3_600_000).toBe(0);
      if (i > 0) expect(Date.parse(b.timestamp) - Date.parse(buckets[i - 1]!.timestamp)).toBe(3_600_000);
    }
    expect(buckets.reduce((n, b) => n + b.runCount, 0)).toBe(5);
    expect(buckets.reduce((n, b) => n + b.successCount, 0)).toBe(4);
    expect(buckets.reduce((n, b) => n + b.failedCount, 0)).toBe(1);
    expect(buckets.at(-1)!.runCount).toBeGreaterThan(0);

    const month = (await get('/api/analytics/time-series?range=30d')).body.buckets as { timestamp: string }[];
    expect(month.length).toBeGreaterThanOrEqual(30);
    expect(month.every((b) => b.timestamp.endsWith('T00:00:00.000Z'))).toBe(true);
    const week = (await get('/api/analytics/time-series?range=7d')).body.buckets as { timestamp: string }[];
    expect(Date.parse(week[1]!.timestamp) - Date.parse(week[0]!.timestamp)).toBe(6 * 3_600_000);
  });

  test('networks: the direct transfer and the workflow transfer on the devnet, with their gas', async () => {
    const res = await get('/api/analytics/networks?range=24h');
    expect(res.status).toBe(200);
    expect(res.body.networks).toEqual([{ network: 'flowgate-devnet', runCount: 2, gasUsedWei: (BigInt(directGas) + workflowGas).toString() }]);
  });

  test('a range with no runs answers zeros and empty lists, not an error', async () => {
    const range = 'range=custom&customStart=2020-01-01T00:00:00Z&customEnd=2020-01-02T00:00:00Z';
    expect((await get(`/api/analytics/summary?${range}`)).body).toEqual({
      totalRuns: 0,
      successfulRuns: 0,
      failedRuns: 0,
      successRate: 0,
      totalGasUsedWei: '0',
      avgExecutionTimeMs: 0,
    });
    expect((await get(`/api/analytics/networks?${range}`)).body).toEqual({ networks: [] });
    expect((await get(`/api/analytics/runs?${range}`)).body).toEqual({ runs: [], nextCursor: null });
    const buckets = (await get(`/api/analytics/time-series?${range}`)).body.buckets as { timestamp: string; runCount: number }[];
    expect(buckets).toHaveLength(24);
    expect(buckets[0]!.timestamp).toBe('2020-01-01T00:00:00.000Z');
    expect(buckets.every((b) => b.runCount === 0)).toBe(true);
  });

  test('bad ranges are 400 invalid_input with the field named', async () => {
    for (const query of [
      'range=1y',
      'range=custom&customStart=2020-01-01T00:00:00Z',
      'range=custom&customStart=2020-01-02T00:00:00Z&customEnd=2020-01-01T00:00:00Z',
      'range=custom&customStart=2020-01-01T00:00:00Z&customEnd=2024-01-01T00:00:00Z',
      'range=7d&customStart=2020-01-01T00:00:00Z',
      'range=custom&customStart=yesterday&customEnd=2020-01-01T00:00:00Z',
    ]) {
      const res = await get(`/api/analytics/summary?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.code, query).toBe('invalid_input');
      expect(res.body.issues[0].path, query).toMatch(/range|customStart|customEnd/);
    }
    // A day its month does not have is refused naming that field, not rolled into the next month (Feb 31 was March 3rd).
    const impossible = await get('/api/analytics/summary?range=custom&customStart=2026-02-31T00:00:00Z&customEnd=2026-03-05T00:00:00Z');
    expect(impossible.status).toBe(400);
    expect(impossible.body.issues[0].path).toBe('customStart');
    expect(impossible.body.error).toContain('on a day that exists');
    expect((await get('/api/analytics/summary?range=custom&customStart=2024-02-29T00:00:00Z&customEnd=2024-03-05T00:00:00Z')).status).toBe(200);
  });
});

describe('runs', () => {
  test('one list of workflow and direct runs, newest first, in the SPEC row shapes', async () => {
    const res = await get('/api/analytics/runs?range=24h');
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    const rows = res.body.runs as any[];
    expect(rows.map((r) => r.id)).toEqual([runs.direct, runs.onchain, runs.failed, runs.ok[1], runs.ok[0]]);
    expect(rows[0]).toEqual({
      id: runs.direct,
      source: 'direct',
      type: 'transfer',
      network: 'flowgate-devnet',
      status: 'success',
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      gasUsedWei: directGas,
      createdAt: expect.any(String),
      completedAt: expect.any(String),
    });
    expect(rows[2]).toEqual({
      id: runs.failed,
      source: 'workflow',
      workflowId: expect.any(String),
      workflowName: 'web3 test',
      status: 'error',
      createdAt: expect.any(String),
      completedAt: expect.any(String),
      durationMs: expect.any(Number),
    });
  });

  test('filters by status and source', async () => {
    const ids = async (query: string) => ((await get(`/api/analytics/runs?${query}`)).body.runs as { id: string }[]).map((r) => r.id);
    expect(await ids('status=error')).toEqual([runs.failed]);
    expect(await ids('source=direct')).toEqual([runs.direct]);
    expect(await ids('source=workflow&status=success')).toEqual([runs.onchain, runs.ok[1], runs.ok[0]]);
    expect(await ids('source=direct&status=error')).toEqual([]);
    expect(await ids('status=pending')).toEqual([]);
    for (const query of ['status=done', 'source=cron', 'limit=0', 'limit=201', 'limit=abc', 'limit=', 'cursor=not-a-cursor']) {
      const res = await get(`/api/analytics/runs?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.code, query).toBe('invalid_input');
      // The message says what a limit is, whatever was wrong with it.
      if (query.startsWith('limit')) expect(res.body.error, query).toContain('limit: expected a whole number from 1 to 200');
    }
  });

  test('pages stay correct while runs are written: no duplicates, no gaps, stable order', async () => {
    // An organization of its own, seeded with 60 runs of both sources, many sharing one creation time.
    const { organization, owner } = await gw.gateway.services.organizations.ensure('paging');
    const key = (await gw.gateway.services.keys.create({ organizationId: organization.id, userId: owner.id, name: 'paging', scope: 'mcp:read' })).key;
    const { store } = gw.gateway.services;
    const workflowId = await insertWorkflow(gw, { organizationId: organization.id, userId: owner.id, name: 'Seeded' });
    const base = Date.now() - 3_600_000;
    const insert = async (at: number) => {
      const createdAt = new Date(at).toISOString();
      if (Math.random() < 0.5) {
        const id = newSortableId(at);
        await store
          .insertInto('workflow_executions')
          .values({ id, workflow_id: workflowId, organization_id: organization.id, user_id: null, status: 'success', input: '{}', created_at: createdAt })
          .execute();
        return id;
      }
      const id = newId();
      await store
        .insertInto('direct_executions')
        .values({
          id,
          organization_id: organization.id,
          api_key_id: null,
          type: 'transfer',
          chain_id: 31337,
          status: 'completed',
          value_wei: '1',
          receipts: '[]',
          created_at: createdAt,
        })
        .execute();
      return id;
    };
    const existing: string[] = [];
    // Every fourth run shares its time with the next ones: ties are broken by id, across sources.
    for (let i = 0; i < 60; i++) existing.push(await insert(base + Math.floor(i / 4) * 1000));

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(`/api/analytics/runs?range=24h&limit=7${cursor ? `&cursor=${cursor}` : ''}`, key);
      expect(res.status).toBe(200);
      seen.push(...(res.body.runs as { id: string }[]).map((r) => r.id));
      cursor = res.body.nextCursor;
      pages++;
      // New runs arrive while the client pages: two now, one at the same time as the oldest seeded ones.
      await insert(Date.now());
      await insert(Date.now());
      await insert(base);
    } while (cursor && pages < 50);

    const seeded = new Set(existing);
    const fromSeed = seen.filter((id) => seeded.has(id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(fromSeed).toHaveLength(60);
    // Newest first and ties by id descending, as the first read of the full list shows them.
    const full = await store
      .selectFrom('workflow_executions')
      .select(['id', 'created_at'])
      .where('organization_id', '=', organization.id)
      .unionAll(store.selectFrom('direct_executions').select(['id', 'created_at']).where('organization_id', '=', organization.id))
      .execute();
    const expected = full
      .filter((r) => seeded.has(r.id))
      .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
      .map((r) => r.id);
    expect(fromSeed).toEqual(expected);
  });
});

describe('steps (session only)', () => {
  test('a run opens to its steps in order, with redacted input, output and duration', async () => {
    const res = await session.fetch(`/api/analytics/runs/${runs.onchain}/steps`);
    expect(res.status).toBe(200);
    const steps = res.body.steps as any[];
    expect(steps.map((s) => s.nodeId)).toEqual(['t', 'send']);
    expect(steps[1]).toMatchObject({ nodeName: 'Send ETH', status: 'success', error: null, durationMs: expect.any(Number), timestamp: expect.any(String) });
    expect(steps[1].output.transactionHash).toMatch(/^0x[0-9a-f]{64}$/);

    const failed = (await session.fetch(`/api/analytics/runs/${runs.failed}/steps`)).body.steps as any[];
    expect(failed.at(-1)).toMatchObject({ nodeId: 'sum', status: 'error', error: expect.any(String) });

    const direct = (await session.fetch(`/api/analytics/runs/${runs.direct}/steps`)).body.steps as any[];
    expect(direct).toEqual([
      expect.objectContaining({ nodeId: 'transfer', status: 'success', output: expect.objectContaining({ transactionHash: expect.any(String) }) }),
    ]);
  });

  test('keys are refused; another organization sees 404, as for a missing run', async () => {
    for (const key of [gw.ownerKey, readKey]) {
      const res = await get(`/api/analytics/runs/${runs.onchain}/steps`, key);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('session_required');
    }
    for (const id of [runs.onchain, runs.direct]) {
      const res = await stranger.client.fetch(`/api/analytics/runs/${id}/steps`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
      expect(JSON.stringify(res.body)).not.toContain('Send ETH');
    }
    expect((await session.fetch('/api/analytics/runs/nope/steps')).status).toBe(404);
  });
});

describe('scopes and tenants', () => {
  test('mcp:read keys and sessions read summary, time-series, networks, runs and spend-cap', async () => {
    for (const path of ['summary', 'time-series', 'networks', 'runs', 'spend-cap']) {
      expect((await get(`/api/analytics/${path}`, readKey)).status, path).toBe(200);
      expect((await session.fetch(`/api/analytics/${path}`)).status, path).toBe(200);
      const anonymous = await fetchJson(`${gw.url}/api/analytics/${path}`);
      expect(anonymous.status, path).toBe(401);
    }
  });

  test("another organization's session sees none of these runs", async () => {
    expect((await stranger.client.fetch('/api/analytics/summary')).body.totalRuns).toBe(0);
    expect((await stranger.client.fetch('/api/analytics/runs')).body.runs).toEqual([]);
    expect((await stranger.client.fetch('/api/analytics/networks')).body.networks).toEqual([]);
  });
});

describe('MCP', () => {
  let owner: Client;
  let reader: Client;
  beforeAll(async () => {
    owner = await connectMcp(gw.url, gw.ownerKey);
    reader = await connectMcp(gw.url, readKey);
  });
  afterAll(async () => {
    await owner?.close();
    await reader?.close();
  });

  test('summary and runs are tools for mcp:read keys; steps is not offered to keys', async () => {
    const names = (await reader.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['get_analytics_summary', 'list_runs']));
    expect(names).not.toContain('get_run_steps');
    const summary = await callTool(reader, 'get_analytics_summary', { range: '24h' });
    expect(summary.isError).toBe(false);
    expect(summary.structured).toMatchObject({ totalRuns: 5, failedRuns: 1 });
    const page = await callTool(reader, 'list_runs', { range: '24h', source: 'direct' });
    expect(page.structured.runs.map((r: { id: string }) => r.id)).toEqual([runs.direct]);
    const steps = await callTool(owner, 'get_run_steps', { executionId: runs.onchain });
    expect(steps.isError).toBe(true);
  });

  test('a signed-in browser lists and calls get_run_steps over MCP', async () => {
    const rpc = (method: string, params: Record<string, unknown>) =>
      session.fetch('/mcp', { method: 'POST', headers: { accept: 'application/json, text/event-stream' }, json: { jsonrpc: '2.0', id: 1, method, params } });
    const listed = await rpc('tools/list', {});
    expect(listed.body.result.tools.map((t: { name: string }) => t.name)).toContain('get_run_steps');
    const called = await rpc('tools/call', { name: 'get_run_steps', arguments: { executionId: runs.onchain } });
    expect(called.status).toBe(200);
    expect(called.body.result.structuredContent.steps.map((s: { nodeId: string }) => s.nodeId)).toEqual(['t', 'send']);
    const foreign = await stranger.client.fetch('/mcp', {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream' },
      json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_run_steps', arguments: { executionId: runs.onchain } } },
    });
    expect(foreign.body.result.isError).toBe(true);
    expect(JSON.parse(foreign.body.result.content[0].text).code).toBe('not_found');
  });
});

/** An SSE client on fetch: eventsource-parser reads the body; the cookie jar of `client` signs it in. */
async function openStream(client: BrowserClient, headers: Record<string, string> = {}) {
  const cookie = await client.jar.getCookieString(gw.url);
  const abort = new AbortController();
  const response = await fetch(`${gw.url}/api/analytics/stream?range=24h`, { headers: { cookie, origin: gw.url, ...headers }, signal: abort.signal });
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  let retry: number | undefined;
  const parser = createParser({ onEvent: (e) => events.push(e), onComment: (c) => comments.push(c), onRetry: (r) => (retry = r) });
  let ended = false;
  const reading = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // Aborted by the test.
    }
    ended = true;
  })();
  return {
    response,
    events,
    comments,
    retry: () => retry,
    ended: () => ended,
    async until(check: () => boolean, ms: number) {
      const deadline = Date.now() + ms;
      while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      return check();
    },
    async close() {
      abort.abort();
      await reading;
    },
  };
}

describe('stream (session only)', () => {
  test('keys are refused before any event', async () => {
    const res = await get('/api/analytics/stream', gw.ownerKey);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('session_required');
  });

  test('a summary at once, a new one after a run completes, resume with Last-Event-ID, heartbeat while idle', async () => {
    const stream = await openStream(session);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await stream.until(() => stream.events.length === 1, 5_000)).toBe(true);
    const first = stream.events[0]!;
    expect(first.id).toBeTruthy();
    const before = JSON.parse(first.data);
    expect(before).toMatchObject({ type: 'summary', data: { totalRuns: expect.any(Number) } });
    expect(stream.retry()).toBe(2000);

    // Nothing changed: no event for a while (changes are checked every 2 s, and only changes are sent).
    await new Promise((r) => setTimeout(r, 2_500));
    expect(stream.events).toHaveLength(1);

    await runWorkflow(gw, linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[3]' })));
    expect(await stream.until(() => stream.events.length === 2, 6_000)).toBe(true);
    const second = stream.events[1]!;
    expect(second.id).toBeTruthy();
    expect(second.id).not.toBe(first.id);
    expect(JSON.parse(second.data).data.totalRuns).toBe(before.data.totalRuns + 1);
    await stream.close();

    // Reconnecting with the last id it saw: the client has the current summary already, so nothing is sent...
    const resumed = await openStream(session, { 'last-event-id': second.id! });
    expect(resumed.response.status).toBe(200);
    // ...only the heartbeat, which keeps an idle connection open.
    expect(await resumed.until(() => resumed.comments.some((c) => c.trim() === 'heartbeat'), 13_000)).toBe(true);
    expect(resumed.events).toHaveLength(0);
    // A change is sent at once with the next check.
    const transfer = await fetchJson(`${gw.url}/api/execute/transfer`, {
      method: 'POST',
      key: gw.ownerKey,
      body: JSON.stringify({ chainId: 31337, recipientAddress: randomAddress(), amount: '0.001' }),
    });
    expect(transfer.status).toBe(202);
    expect(await resumed.until(() => resumed.events.length === 1, 6_000)).toBe(true);
    expect(JSON.parse(resumed.events[0]!.data).data.totalRuns).toBe(before.data.totalRuns + 2);
    await resumed.close();

    // Reconnecting with an id that is out of date: the current summary comes at once.
    const stale = await openStream(session, { 'last-event-id': first.id! });
    expect(await stale.until(() => stale.events.length === 1, 3_000)).toBe(true);
    expect(JSON.parse(stale.events[0]!.data).data.totalRuns).toBe(before.data.totalRuns + 2);

    // Signing out ends an open stream at its next check.
    const out = await session.fetch('/api/auth/sign-out', { method: 'POST' });
    expect(out.status).toBeLessThan(300);
    expect(await stale.until(() => stale.ended(), 5_000)).toBe(true);
    await stale.close();
  }, 60_000);
});

describe('hourly rollups', () => {
  /** The figures as a reader of the raw rows would compute them, for one organization and window. */
  async function fromRows(organizationId: string, since: string) {
    const { store } = gw.gateway.services;
    const wf = await store
      .selectFrom('workflow_executions')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('created_at', '>=', since)
      .execute();
    const dx = await store.selectFrom('direct_executions').selectAll().where('organization_id', '=', organizationId).where('created_at', '>=', since).execute();
    const gas = [...wf.map((r) => r.gas_used_wei), ...dx.map((r) => r.gas_used_wei)].reduce((n, g) => n + BigInt(g ?? 0), 0n);
    const perChain = new Map<number, { runs: number; gas: bigint }>();
    const count = (chainId: number, g: bigint) => {
      const into = perChain.get(chainId) ?? { runs: 0, gas: 0n };
      perChain.set(chainId, { runs: into.runs + 1, gas: into.gas + g });
    };
    for (const r of wf) {
      const txs = JSON.parse(r.transaction_hashes ?? '[]') as { chainId: number; gasUsedWei?: string }[];
      for (const chainId of new Set(txs.map((t) => t.chainId)))
        count(
          chainId,
          txs.filter((t) => t.chainId === chainId).reduce((n, t) => n + BigInt(t.gasUsedWei ?? 0), 0n),
        );
    }
    for (const r of dx) count(r.chain_id, BigInt(r.gas_used_wei ?? 0));
    return {
      totalRuns: wf.length + dx.length,
      successfulRuns: wf.filter((r) => r.status === 'success').length + dx.filter((r) => r.status === 'completed').length,
      failedRuns: wf.filter((r) => ['error', 'system_error'].includes(r.status)).length + dx.filter((r) => r.status === 'failed').length,
      totalGasUsedWei: gas.toString(),
      networks: [...perChain.entries()].map(([chainId, n]) => ({ chainId, runCount: n.runs, gasUsedWei: n.gas.toString() })),
    };
  }

  test('whole hours from the rollups agree with the runs after inserts, status changes and deletes', async () => {
    const { store } = gw.gateway.services;
    const { organization, owner } = await gw.gateway.services.organizations.ensure('rollups');
    const key = (await gw.gateway.services.keys.create({ organizationId: organization.id, userId: owner.id, name: 'rollups', scope: 'mcp:read' })).key;
    const workflowId = newId();
    const stamp = new Date().toISOString();
    await store
      .insertInto('workflows')
      .values({
        id: workflowId,
        organization_id: organization.id,
        user_id: owner.id,
        name: 'Rolled',
        visibility: 'private',
        nodes: '[]',
        edges: '[]',
        enabled: 1,
        featured: 0,
        created_at: stamp,
        updated_at: stamp,
      })
      .execute();
    const now = Date.now();
    const ids: string[] = [];
    // 40 runs over the last three days (many hours ago: the rollups' part of the window), of every kind.
    for (let i = 0; i < 40; i++) {
      const at = new Date(now - (i + 1) * 97 * 60_000 - i * 1_234).toISOString();
      const done = new Date(Date.parse(at) + 100 + i).toISOString();
      if (i % 3 === 2) {
        const id = newId();
        await store
          .insertInto('direct_executions')
          .values({
            id,
            organization_id: organization.id,
            type: 'transfer',
            chain_id: i % 2 ? 8453 : 1,
            status: i % 4 ? 'completed' : 'failed',
            value_wei: '1',
            receipts: '[]',
            gas_used_wei: i % 4 ? `${i}000000000123456789` : null,
            created_at: at,
            completed_at: done,
          })
          .execute();
        ids.push(id);
        continue;
      }
      const id = newSortableId(Date.parse(at));
      const txs =
        i % 2
          ? [
              { hash: '0x1', nodeId: 'a', nodeName: 'A', chainId: 8453, gasUsedWei: `${i}999999999` },
              { hash: '0x2', nodeId: 'b', nodeName: 'B', chainId: 1, gasUsedWei: '5' },
            ]
          : [];
      await store
        .insertInto('workflow_executions')
        .values({
          id,
          workflow_id: workflowId,
          organization_id: organization.id,
          status: 'pending',
          input: '{}',
          created_at: at,
          transaction_hashes: JSON.stringify(txs),
        })
        .execute();
      ids.push(id);
    }
    // The engine's life of a run: claimed, then finished with gas; some fail; heartbeats change nothing counted.
    const workflowIds = (
      await store.selectFrom('workflow_executions').select(['id', 'created_at']).where('organization_id', '=', organization.id).execute()
    ).map((r) => r);
    for (const [n, run] of workflowIds.entries()) {
      await store.updateTable('workflow_executions').set({ status: 'running', started_at: run.created_at }).where('id', '=', run.id).execute();
      await store.updateTable('workflow_executions').set({ heartbeat_at: stamp, lease_expires_at: now }).where('id', '=', run.id).execute();
      if (n % 5 === 4) continue;
      const gas = n % 2 ? `${n}999999999` : null;
      await store
        .updateTable('workflow_executions')
        .set({ status: n % 3 ? 'success' : 'system_error', completed_at: new Date(Date.parse(run.created_at) + 250).toISOString(), gas_used_wei: gas })
        .where('id', '=', run.id)
        .execute();
    }
    // Deleting history takes it out of the totals again.
    await store.deleteFrom('workflow_executions').where('id', '=', workflowIds[1]!.id).execute();
    await store.deleteFrom('direct_executions').where('id', '=', ids[2]!).execute();

    const since = new Date(now - 7 * 24 * 3_600_000).toISOString();
    const expected = await fromRows(organization.id, since);
    const summary = (await get('/api/analytics/summary?range=7d', key)).body;
    expect(summary).toMatchObject({
      totalRuns: expected.totalRuns,
      successfulRuns: expected.successfulRuns,
      failedRuns: expected.failedRuns,
      totalGasUsedWei: expected.totalGasUsedWei,
    });
    expect(expected.totalRuns).toBe(38);
    const buckets = (await get('/api/analytics/time-series?range=7d', key)).body.buckets as { runCount: number; successCount: number; failedCount: number }[];
    expect(buckets.reduce((n, b) => n + b.runCount, 0)).toBe(expected.totalRuns);
    expect(buckets.reduce((n, b) => n + b.successCount, 0)).toBe(expected.successfulRuns);
    expect(buckets.reduce((n, b) => n + b.failedCount, 0)).toBe(expected.failedRuns);
    expect(buckets.filter((b) => b.runCount > 0).length).toBeGreaterThan(5);
    const networks = (await get('/api/analytics/networks?range=7d', key)).body.networks as { network: string; runCount: number; gasUsedWei: string }[];
    const names: Record<number, string> = { 1: 'ethereum', 8453: 'base' };
    expect(networks.map((n) => ({ ...n })).sort((a, b) => a.network.localeCompare(b.network))).toEqual(
      expected.networks
        .map((n) => ({ network: names[n.chainId], runCount: n.runCount, gasUsedWei: n.gasUsedWei }))
        .sort((a, b) => a.network!.localeCompare(b.network!)),
    );
  });
});

// On the store FLOWGATE_TEST_DATABASE selects: SQLite, or PostgreSQL's PL/pgSQL triggers and backfill.
test('migration 016 counts the runs stored before it into the rollups', async () => {
  const store = await openTestStore();
  await migrate(store, '014_signup_email');
  const at = new Date(Date.now() - 5 * 3_600_000).toISOString();
  await store.insertInto('organizations').values({ id: 'org', slug: 'org', name: 'Org', created_at: at }).execute();
  await store
    .insertInto('workflows')
    .values({
      id: 'wf',
      organization_id: 'org',
      name: 'W',
      visibility: 'private',
      nodes: '[]',
      edges: '[]',
      enabled: 1,
      featured: 0,
      created_at: at,
      updated_at: at,
    })
    .execute();
  const txs = JSON.stringify([{ hash: '0x1', nodeId: 'a', nodeName: 'A', chainId: 8453, gasUsedWei: '7' }]);
  await store
    .insertInto('workflow_executions')
    .values([
      {
        id: 'r1',
        workflow_id: 'wf',
        organization_id: 'org',
        status: 'success',
        created_at: at,
        started_at: at,
        completed_at: at,
        gas_used_wei: '7',
        transaction_hashes: txs,
      },
      { id: 'r2', workflow_id: 'wf', organization_id: 'org', status: 'error', created_at: at },
      // Unreadable transactions and gas count as none, in the backfill as in the triggers, rather than failing.
      { id: 'r3', workflow_id: 'wf', organization_id: 'org', status: 'running', created_at: at, gas_used_wei: 'n/a', transaction_hashes: 'not json' },
    ])
    .execute();
  await store
    .insertInto('direct_executions')
    .values({
      id: 'd1',
      organization_id: 'org',
      type: 'transfer',
      chain_id: 8453,
      status: 'completed',
      value_wei: '1',
      receipts: '[]',
      gas_used_wei: '3000000000000000000000',
      created_at: at,
      completed_at: at,
    })
    .execute();
  await migrate(store);
  const window = resolveWindow({ range: '24h' });
  const chains = createChainCatalog(loadConfig({ FLOWGATE_DATA_DIR: tempDir(), FLOWGATE_DEVNET: 'off' }));
  const expected = { totalRuns: 4, successfulRuns: 2, failedRuns: 1, totalGasUsedWei: '3000000000000000000007' };
  const expectedNetworks = { networks: [{ network: 'base', runCount: 2, gasUsedWei: '3000000000000000000007' }] };
  expect(await summaryOf(store, 'org', window)).toMatchObject(expected);
  expect(await networksOf(store, chains, 'org', window)).toEqual(expectedNetworks);
  // The triggers keep it exact: r3 finishes with the same unreadable fields, then is deleted.
  await store.updateTable('workflow_executions').set({ status: 'error', completed_at: at }).where('id', '=', 'r3').execute();
  expect(await summaryOf(store, 'org', window)).toMatchObject({ ...expected, failedRuns: 2 });
  await store.deleteFrom('workflow_executions').where('id', '=', 'r3').execute();
  expect(await summaryOf(store, 'org', window)).toMatchObject({ ...expected, totalRuns: 3 });
  expect(await networksOf(store, chains, 'org', window)).toEqual(expectedNetworks);
  await store.destroy();
});
