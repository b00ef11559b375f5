import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeFunctionData, keccak256, toHex } from 'viem';
import { getAction } from '../src/actions/index.ts';
import { checkInputSchema } from '../src/catalog/input.ts';
import { loadCatalog } from '../src/catalog/load.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/** Listings, free calls, calldata, schema enforcement and the per-workflow MCP servers, over real HTTP. */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
});
afterAll(() => gw.close());

const call = (slug: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetchJson(`${gw.url}/api/mcp/workflows/${slug}/call`, { method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });

async function connectWorkflow(slug: string) {
  const client = new Client({ name: 'workflow-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp/w/${slug}`)));
  return client;
}

describe('GET /api/mcp/workflows', () => {
  it('lists every catalog slug with schema, result fields, type, chain and pricing', async () => {
    const { status, body } = await fetchJson(`${gw.url}/api/mcp/workflows`);
    expect(status).toBe(200);
    const slugs = body.workflows.map((w: { slug: string }) => w.slug);
    // Every catalog file except those with a step that cannot run on this gateway (none since issue 16 gave e-mail a runner).
    const runnable = loadCatalog().filter((e) =>
      (e.workflow.nodes as { data: { config: { actionType?: string } } }[]).every((n) => getAction(n.data.config.actionType ?? '')?.featureEnabled !== false),
    );
    expect(slugs).toEqual(runnable.map((e) => e.slug));
    expect(slugs).toContain('email-send');
    const yieldCompare = body.workflows.find((w: { slug: string }) => w.slug === 'stablecoin-yield-compare-base');
    expect(yieldCompare).toMatchObject({
      type: 'read',
      chainId: 8453,
      free: false,
      price: { mode: 'fixed', amount: '0.05', currency: 'USD' },
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      call: { method: 'POST', url: `${gw.url}/api/mcp/workflows/stablecoin-yield-compare-base/call` },
      mcpUrl: `${gw.url}/mcp/w/stablecoin-yield-compare-base`,
    });
    expect(Object.keys(yieldCompare.outputFields)).toEqual(expect.arrayContaining(['rates', 'bestRate', 'bestProtocol']));
    expect(yieldCompare.protocols).toEqual([
      expect.objectContaining({ protocol: 'x402', scheme: 'exact', network: expect.stringMatching(/^eip155:\d+$/) }),
      expect.objectContaining({ protocol: 'mpp', method: 'evm', intent: 'charge', currency: 'USDC' }),
    ]);
    const health = body.workflows.find((w: { slug: string }) => w.slug === 'defi-position-aggregator-base');
    expect(Object.keys(health.outputFields)).toEqual(expect.arrayContaining(['healthFactor', 'totalCollateralUSD', 'totalDebtUSD', 'riskLevel']));
    const hello = body.workflows.find((w: { slug: string }) => w.slug === 'helloworld');
    expect(hello).toMatchObject({ free: true, price: null, protocols: [] });
    // Prices are decimal strings exactly as listed.
    expect(body.workflows.find((w: { slug: string }) => w.slug === 'eu-ai-act-audit').price.amount).toBe('0.10');
  });

  it('answers one listing by slug, and 404 with a hint for an unknown slug', async () => {
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/microtip`)).body).toMatchObject({ slug: 'microtip', price: { amount: '0.01' } });
    const missing = await call('no-such-workflow', {});
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'listing_not_found', hint: 'GET /api/mcp/workflows' });
  });
});

describe('POST /api/mcp/workflows/{slug}/call (free)', () => {
  it('runs a free read workflow and answers its result in output.result', async () => {
    const { status, body } = await call('helloworld');
    expect(status).toBe(200);
    expect(body).toMatchObject({ executionId: expect.any(String), status: 'success', output: { result: { message: 'Hello, world!' } } });
    const echo = await call('simple-workflow', { txid: '0xabc', amount: 1.5 });
    expect(echo.body.output.result).toEqual({ txid: '0xabc', amount: 1.5, received: true });
  });

  it('refuses malformed JSON with 400 (never treated as {})', async () => {
    const res = await fetch(`${gw.url}/api/mcp/workflows/simple-workflow/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"txid": ',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_json' });
  });

  it('enforces every catalog input schema: missing, extra and mistyped fields are 400s naming the field', async () => {
    const cases: [string, unknown, string][] = [
      ['stablecoin-price-check', {}, 'stablecoin'],
      ['stablecoin-price-check', { stablecoin: 'DAI' }, 'stablecoin'],
      ['token-safety-check', { tokenAddress: 'nope' }, 'tokenAddress'],
      ['simple-workflow', { amount: 'ten' }, 'amount'],
      ['defi-position-aggregator-base', { wallet: '0x0000000000000000000000000000000000000001', extra: 1 }, 'extra'],
      ['defi-position-aggregator-ethereum', {}, 'wallet'],
      ['stablecoin-yield-compare-base', { anything: true }, 'anything'],
      ['yield-curve-snapshot-ethereum-weth', { x: 1 }, 'x'],
      ['token-approval-risk-scanner-ethereum', {}, 'wallet'],
      [
        'mev-aware-swap-quote-base',
        {
          sell_token: '0x4200000000000000000000000000000000000006',
          buy_token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
          sell_amount_raw: '1',
          chain: 'ethereum',
        },
        'chain',
      ],
      [
        'mev-aware-swap-quote-ethereum',
        { sell_token: '0x4200000000000000000000000000000000000006', buy_token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', sell_amount_raw: 1 },
        'sell_amount_raw',
      ],
      ['eu-ai-act-audit', {}, 'agentName'],
      ['price-decimals', { coin: 'doge' }, 'coin'],
      ['agent-task', { task: 'sleep' }, 'task'],
      ['commit-vote-v1', { jobId: 'j1' }, 'commitHash'],
      ['reveal-vote-v2', { jobId: 'j1', verdict: 'yes' }, 'nonce'],
      ['settle-v3', {}, 'jobId'],
      ['buy-me-a-coffee', { message: 42 }, 'message'],
      ['usdc-eth-price-alert-workflow', { price: 3000 }, 'price'],
    ];
    for (const [slug, body, field] of cases) {
      const res = await call(slug, body);
      expect(res.status, `${slug} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.code).toBe('invalid_input');
      expect(
        res.body.issues.map((i: { path: string }) => i.path),
        slug,
      ).toContain(field);
      expect(res.body.error).toContain(field);
    }
  });

  it('write workflows answer unsigned calldata and never execute', async () => {
    const commitHash = keccak256(toHex('job-7|yes|s3cret'));
    const { status, body } = await call('commit-vote-v2', { jobId: 'job-7', commitHash });
    expect(status).toBe(200);
    expect(body).toEqual({ type: 'calldata', to: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/), data: expect.stringMatching(/^0x/), value: '0' });
    const abi = [
      {
        type: 'function',
        name: 'commitVote',
        stateMutability: 'nonpayable',
        inputs: [
          { name: 'jobId', type: 'string' },
          { name: 'commitHash', type: 'bytes32' },
        ],
        outputs: [],
      },
    ] as const;
    expect(decodeFunctionData({ abi, data: body.data })).toEqual({ functionName: 'commitVote', args: ['job-7', commitHash] });
    const reveal = await call('reveal-vote-v1', { jobId: 'job-7', verdict: 'yes', nonce: 's3cret' });
    expect(reveal.body.type).toBe('calldata');
    const settle = await call('settle-v3', { jobId: 'job-7' });
    expect(settle.body).toMatchObject({ type: 'calldata', value: '0' });
    expect(settle.body.to).not.toBe(body.to);
    const executions = await gw.gateway.services.store.selectFrom('workflow_executions').select('id').where('trigger_type', '=', 'Manual').execute();
    const listings = await gw.gateway.services.store.selectFrom('workflow_listings').select('workflow_id').where('workflow_type', '=', 'write').execute();
    const ran = await gw.gateway.services.store
      .selectFrom('workflow_executions')
      .select('id')
      .where(
        'workflow_id',
        'in',
        listings.map((l) => l.workflow_id),
      )
      .execute();
    expect(executions.length).toBeGreaterThan(0);
    expect(ran).toEqual([]);
  });
});

describe('MCP', () => {
  it('/mcp/w/<slug> serves exactly one tool named after the slug, typed by the listing', async () => {
    const client = await connectWorkflow('price-decimals');
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({
      name: 'price-decimals',
      inputSchema: { type: 'object', required: ['coin'], properties: { coin: { enum: ['btc', 'eth', 'link', 'dai'] } } },
      annotations: { readOnlyHint: true },
    });
    expect(tools[0].description).toContain('Free');
    await client.close();

    const write = await connectWorkflow('settle-v1');
    const [tool] = (await write.listTools()).tools;
    expect(tool.annotations?.readOnlyHint).toBe(false);
    const result = await write.callTool({ name: 'settle-v1', arguments: { jobId: 'job-1' } });
    expect(result.structuredContent).toMatchObject({ type: 'calldata' });
    const bad = await write.callTool({ name: 'settle-v1', arguments: {} });
    expect(bad.isError).toBe(true);
    expect(JSON.parse((bad.content as { text: string }[])[0].text)).toMatchObject({ code: 'invalid_input' });
    await write.close();

    const paid = await connectWorkflow('microtip');
    expect((await paid.listTools()).tools[0].description).toContain('0.01 USD');
    await paid.close();
  });

  it('calls a free workflow through its own server and through call_workflow on /mcp', async () => {
    const client = await connectWorkflow('helloworld');
    const result = await client.callTool({ name: 'helloworld', arguments: {} });
    expect(result.structuredContent).toMatchObject({ status: 'success', output: { result: { message: 'Hello, world!' } } });
    await client.close();

    const mcp = await connectMcp(gw.url);
    const called = await callTool(mcp, 'call_workflow', { slug: 'agent-task', inputs: {} });
    expect(called.isError).toBe(true);
    expect(called.body.issues[0].path).toBe('task');
    const listing = await callTool(mcp, 'get_workflow_listing', { slug: 'helloworld' });
    expect(listing.body).toMatchObject({ slug: 'helloworld', free: true });
    const viaMcp = await callTool(mcp, 'call_workflow', { slug: 'helloworld' });
    expect(viaMcp.body).toMatchObject({ status: 'success' });
    await mcp.close();
  });

  it('an unknown slug on /mcp/w is a 404', async () => {
    const res = await fetchJson(`${gw.url}/mcp/w/nope`, {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      headers: { accept: 'application/json, text/event-stream' },
    });
    expect(res.status).toBe(404);
  });
});

describe('catalog sync', () => {
  // Start-up no longer compiles them (src/catalog/load.ts): a shipped schema that would fail a call is caught here.
  it('every catalog file has an input schema that passes the check a publish gets', () => {
    const entries = loadCatalog();
    expect(entries.length).toBeGreaterThan(20);
    for (const entry of entries) expect(() => checkInputSchema(entry.inputSchema), entry.slug).not.toThrow();
  });

  it('a restart with an edited catalog updates the listing in place', async () => {
    const { syncCatalog } = await import('../src/catalog/sync.ts');
    const entries = loadCatalog();
    const before = await fetchJson(`${gw.url}/api/mcp/workflows/microtip`);
    const edited = entries
      .map((e) => (e.slug === 'microtip' ? { ...e, price: '0.02', description: 'Edited.' } : e))
      .filter((e) => e.slug !== 'buy-me-a-coffee');
    await syncCatalog(gw.gateway.services, edited);
    const after = await fetchJson(`${gw.url}/api/mcp/workflows/microtip`);
    expect(after.body).toMatchObject({ price: { amount: '0.02' }, description: 'Edited.', workflowId: before.body.workflowId });
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/buy-me-a-coffee`)).status).toBe(404);
    await syncCatalog(gw.gateway.services, entries);
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/buy-me-a-coffee`)).status).toBe(200);
  });
});

describe('discovery of paid calls', () => {
  it('/.well-known/x402 lists every paid listing as a POST resource', async () => {
    const { status, body } = await fetchJson(`${gw.url}/.well-known/x402`);
    expect(status).toBe(200);
    const paid = loadCatalog().filter((e) => e.price !== null);
    expect(body).toEqual({ version: 1, resources: paid.map((e) => `POST ${gw.url}/api/mcp/workflows/${e.slug}/call`).sort() });
  });

  it('/openapi.json has one operation per listing: request body from the listing, x-payment-info and 402 for paid ones, empty security for free ones', async () => {
    const { body } = await fetchJson(`${gw.url}/openapi.json`);
    const paid = body.paths['/api/mcp/workflows/stablecoin-yield-compare-base/call'].post;
    expect(paid.security).toEqual([{ payment: [] }]);
    expect(paid['x-payment-info']).toMatchObject({
      price: { mode: 'fixed', amount: '0.05', currency: 'USD' },
      offers: [
        expect.objectContaining({ protocol: 'x402', intent: 'charge', amount: '0.05' }),
        expect.objectContaining({ protocol: 'mpp', method: 'evm', intent: 'charge', currency: 'USDC' }),
      ],
    });
    expect(paid.responses['402'].headers).toHaveProperty('PAYMENT-REQUIRED');
    expect(paid.requestBody.content['application/json'].schema).toEqual({ type: 'object', properties: {}, additionalProperties: false });
    const free = body.paths['/api/mcp/workflows/price-decimals/call'].post;
    expect(free.security).toEqual([]);
    expect(free['x-payment-info']).toBeUndefined();
    expect(free.responses['402']).toBeUndefined();
    expect(free.requestBody).toMatchObject({ required: true, content: { 'application/json': { schema: { required: ['coin'] } } } });
    expect(body.components.securitySchemes.payment).toMatchObject({ type: 'http', scheme: 'Payment' });
  });
});

describe('rate limits on the per-workflow servers', () => {
  it('anonymous tools/call beyond the per-IP budget is HTTP 429 with JSON-RPC -32029 and Retry-After', async () => {
    const limited = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_MCP_PUBLIC_CALLS_PER_IP: '2' } });
    try {
      const rpc = (id: number) =>
        fetchJson(`${limited.url}/mcp/w/helloworld`, {
          method: 'POST',
          headers: { accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'helloworld', arguments: {} } }),
        });
      expect((await rpc(1)).status).toBe(200);
      expect((await rpc(2)).status).toBe(200);
      const refused = await rpc(3);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe(-32029);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });

  it('anonymous REST calls of a free workflow share that per-IP budget; a caller with a key is not counted', async () => {
    const limited = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_MCP_PUBLIC_CALLS_PER_IP: '2' } });
    try {
      const call = (key?: string) => fetchJson(`${limited.url}/api/mcp/workflows/helloworld/call`, { method: 'POST', body: '{}', ...(key ? { key } : {}) });
      const allowed = [await call(), await call()];
      expect(allowed.map((r) => r.status)).toEqual([200, 200]);
      expect(allowed[1]!.body.status).toBe('success');
      const refused = await call();
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('rate_limited');
      expect(refused.body.error).toContain('anonymous calls of free workflows are limited per IP address');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      const runs = await limited.gateway.services.store.selectFrom('workflow_executions').select('id').execute();
      expect(runs).toHaveLength(2);
      expect((await call(limited.ownerKey)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
