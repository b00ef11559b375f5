import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../tools/define.ts';
import { registry } from '../tools/index.ts';
import { deepFreeze, isDeepFrozen } from '../src/immutable.ts';
import { fetchJson, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/**
 * A deeply frozen handler output (the chain catalog's lists) is checked and serialized once
 * (tools/invoke.ts, src/http/rest.ts, src/mcp/toolset.ts, src/mcp/fast-path.ts). These hold the
 * kept answers to what a fresh check would say, and keep anything mutable out of the keeping.
 */

const frozenOutput = deepFreeze({ items: [{ name: 'a', secret: 'never sent' }] });
// Frozen at the top only: an element can still change, so nothing derived from it may be kept.
const shallowOutput = Object.freeze({ items: [{ name: 'first' }] as { name: string; secret?: string }[] });
const broken = deepFreeze({ items: [{ name: 42 }] });
const counter = { items: [{ name: 'call 0' }] };

const outputs: Record<string, unknown> = { frozen: frozenOutput, shallow: shallowOutput, broken, counter };
const probe = defineTool({
  name: 'test_static_probe',
  title: 'Static probe (test)',
  description: 'Returns one of the outputs above, as is.',
  scope: 'public',
  input: z.object({ which: z.enum(['frozen', 'shallow', 'broken', 'counter']) }),
  output: z.object({ items: z.array(z.object({ name: z.string() })) }),
  rest: { method: 'GET', path: '/api/test/static-probe', query: ['which'] },
  mcp: { annotations: { readOnlyHint: true } },
  handler: ({ which }) => outputs[which] as { items: { name: string }[] },
});

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ tools: [...registry, probe], env: { FLOWGATE_RATE_LIMITS: 'off' } });
});
afterAll(() => gw.close());

const get = (which: string) => fetchJson(`${gw.url}/api/test/static-probe?which=${which}`);

describe('answers of deeply frozen outputs', () => {
  it('isDeepFrozen looks all the way down', () => {
    expect(isDeepFrozen(frozenOutput)).toBe(true);
    expect(isDeepFrozen(shallowOutput)).toBe(false);
    expect(isDeepFrozen({ a: 1 })).toBe(false);
  });

  it('REST: the same bytes, ETag and 304 on every call, undeclared fields stripped every time', async () => {
    const first = await rawGet(`${gw.url}/api/test/static-probe?which=frozen`);
    const second = await rawGet(`${gw.url}/api/test/static-probe?which=frozen`);
    expect(first.status).toBe(200);
    expect(first.body).toBe('{"items":[{"name":"a"}]}');
    expect(second.body).toBe(first.body);
    expect(second.headers.etag).toBe(first.headers.etag);
    expect(second.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(second.headers['content-length']).toBe(String(Buffer.byteLength(first.body)));
    const again = await rawGet(`${gw.url}/api/test/static-probe?which=frozen`, { 'if-none-match': String(first.headers.etag) });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
  });

  it('an output that fails its schema fails on every call, frozen or not', async () => {
    for (let i = 0; i < 2; i++) expect((await get('broken')).status).toBe(500);
  });

  it('a mutable or partly frozen output is checked and serialized afresh on each call', async () => {
    expect((await get('counter')).body).toEqual({ items: [{ name: 'call 0' }] });
    counter.items[0]!.name = 'call 1';
    expect((await get('counter')).body).toEqual({ items: [{ name: 'call 1' }] });

    expect((await get('shallow')).body).toEqual({ items: [{ name: 'first' }] });
    shallowOutput.items[0]!.name = 'second';
    shallowOutput.items[0]!.secret = 'must not leak';
    expect((await get('shallow')).body).toEqual({ items: [{ name: 'second' }] });
  });

  it('MCP: the same result on every call; a mutable output followed as it changes', async () => {
    const client = await connectMcp(gw.url);
    try {
      const first = await callTool(client, 'test_static_probe', { which: 'frozen' });
      const second = await callTool(client, 'test_static_probe', { which: 'frozen' });
      expect(first).toEqual({ isError: false, body: { items: [{ name: 'a' }] }, structured: { items: [{ name: 'a' }] } });
      expect(second).toEqual(first);
      counter.items[0]!.name = 'call 2';
      expect((await callTool(client, 'test_static_probe', { which: 'counter' })).structured).toEqual({ items: [{ name: 'call 2' }] });
      counter.items[0]!.name = 'call 3';
      expect((await callTool(client, 'test_static_probe', { which: 'counter' })).structured).toEqual({ items: [{ name: 'call 3' }] });
    } finally {
      await client.close();
    }
  });

  it('GET /api/chains and list_chains answer the same list on repeated calls', async () => {
    const first = await rawGet(`${gw.url}/api/chains`);
    const second = await rawGet(`${gw.url}/api/chains`);
    expect(second.body).toBe(first.body);
    expect(second.headers.etag).toBe(first.headers.etag);
    const client = await connectMcp(gw.url);
    try {
      for (let i = 0; i < 2; i++) expect((await callTool(client, 'list_chains')).structured).toEqual({ chains: JSON.parse(first.body) });
    } finally {
      await client.close();
    }
  });
});
