import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLengthWithin } from '../src/engine/json-size.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { action, trigger } from './helpers/web3.ts';

/**
 * A run's data limit (FLOWGATE_RUN_DATA_LIMIT_BYTES): a tenant's run cannot
 * hold or log more JSON than the limit, however its workflow multiplies what
 * it fetches. Before it, one For Each over 100 answers of 4 MB held 1.5 GB of
 * memory and wrote a 420 MB database before the run crashed on a string too
 * long to make; 32 such runs at once would have ended the process.
 */

const LIMIT = 1024 * 1024;
let gw: TestGateway;
let server: http.Server;
let target: string;
/** Requests the target received, by path. */
const hits: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      hits.push(`${req.method} ${url.pathname}`);
      if (url.pathname === '/big') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ blob: 'x'.repeat(Number(url.searchParams.get('kb')) * 1024) }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received: body.length }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  gw = await startTestGateway({
    env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1', FLOWGATE_RUN_DATA_LIMIT_BYTES: String(LIMIT) },
  });
});

afterAll(async () => {
  await gw?.close();
  await new Promise((resolve) => server?.close(resolve));
});

const api = (path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key: gw.ownerKey, ...init });

async function run(nodes: unknown[], edges: [string, string][], input: Record<string, unknown> = {}) {
  const created = await api('/api/workflows/create', {
    method: 'POST',
    body: JSON.stringify({ name: 'data limit', nodes, edges: edges.map(([source, target], i) => ({ id: `e${i}`, source, target })) }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: JSON.stringify({ input }) });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const waited = await api(`/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=30000`);
  expect(waited.status).toBe(200);
  const logs = (await api(`/api/workflows/executions/${started.body.executionId}/logs`)).body.logs as any[];
  return { result: waited.body, logs };
}

const fetchBig = (id: string, label: string, kb: number) =>
  action(id, label, { actionType: 'HTTP Request', endpoint: `${target}/big?kb=${kb}`, httpMethod: 'GET' });
const loop = action('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.items}}' });
const collect = action('col', 'Collect', { actionType: 'Collect' });
/** What the run's log rows hold, as JSON text. */
const loggedChars = (logs: any[]) => logs.reduce((sum, l) => sum + JSON.stringify(l.input ?? null).length + JSON.stringify(l.output ?? null).length, 0);
const fetchesOf = () => hits.filter((h) => h === 'GET /big').length;

describe('a run past its data limit', () => {
  it('stops a For Each at the answer that would cross the limit, with the reason, and logs no more than the limit', async () => {
    const before = fetchesOf();
    const { result, logs } = await run(
      [trigger(), loop, fetchBig('h', 'Fetch', 300), collect],
      [
        ['t', 'loop'],
        ['loop', 'h'],
        ['h', 'col'],
      ],
      {
        items: Array.from({ length: 20 }, (_, i) => i),
      },
    );
    expect(result.status).toBe('error');
    expect(result.error).toMatch(/^Node "Loop" \(loop\) failed: Iteration 3 failed at "Fetch" \(h\): this step's output is 0\.29 MB/);
    expect(result.error).toContain('FLOWGATE_RUN_DATA_LIMIT_BYTES');
    expect(result.error).toContain('maxIterations');
    // Three answers fit in 1 MB, the fourth was fetched and refused, and the loop went no further.
    expect(fetchesOf() - before).toBe(4);
    const refused = logs.find((l) => l.nodeId === 'h' && l.iterationIndex === 3);
    expect(refused.status).toBe('error');
    expect(refused.output).toEqual({ success: false, error: expect.stringContaining('of its 1.00 MB limit') });
    expect(logs.filter((l) => l.nodeId === 'h' && l.status === 'success')).toHaveLength(3);
    expect(loggedChars(logs)).toBeLessThan(LIMIT + 64 * 1024);
  });

  it('runs to success when what the steps fetch fits, every answer whole', async () => {
    const { result, logs } = await run(
      [trigger(), loop, fetchBig('h', 'Fetch', 300)],
      [
        ['t', 'loop'],
        ['loop', 'h'],
      ],
      { items: [1, 2] },
    );
    expect(result.status, result.error).toBe('success');
    const fetched = logs.filter((l) => l.nodeId === 'h');
    expect(fetched.map((l) => l.output.data.blob.length)).toEqual([300 * 1024, 300 * 1024]);
  });

  it('fails the Collect whose results do not fit, naming it', async () => {
    // 3 × 150 KB fit; the Collect lists them again (data.results and results), which does not.
    const { result, logs } = await run(
      [trigger(), loop, fetchBig('h', 'Fetch', 150), collect],
      [
        ['t', 'loop'],
        ['loop', 'h'],
        ['h', 'col'],
      ],
      {
        items: [1, 2, 3],
      },
    );
    expect(result.status).toBe('error');
    expect(result.error).toMatch(/^Node "Loop" \(loop\) failed: Collect "Collect" \(col\) failed: this step's output is/);
    expect(logs.find((l) => l.nodeId === 'col').status).toBe('error');
    expect(logs.find((l) => l.nodeId === 'loop').status).toBe('error');
  });

  /** Fetch (200 KB) → Send (a POST to the target, configured by `config`): the run, and how many POSTs reached the target meanwhile. */
  async function fetchThenSend(config: Record<string, unknown>) {
    const posts = () => hits.filter((h) => h === 'POST /echo').length;
    const before = posts();
    const send = action('send', 'Send', { actionType: 'HTTP Request', endpoint: `${target}/echo`, httpMethod: 'POST', ...config });
    const ran = await run(
      [trigger(), fetchBig('h', 'Fetch', 200), send],
      [
        ['t', 'h'],
        ['h', 'send'],
      ],
    );
    return { ...ran, sent: posts() - before, row: ran.logs.find((l) => l.nodeId === 'send') };
  }

  it('refuses templates that expand one answer into more text than the run has left, before the request is sent', async () => {
    const { result, sent, row } = await fetchThenSend({ httpBody: Array.from({ length: 10 }, () => '{{@h:Fetch.data.blob}}').join(' and ') });
    expect(result.status).toBe('error');
    expect(result.error).toMatch(
      /^Node "Send" \(send\) failed: The templates in this step's config expand to more text than the run has left of its data limit/,
    );
    expect(sent).toBe(0);
    expect(row.status).toBe('error');
  });

  it('refuses a config that quotes one answer in many fields, before it is copied or sent', async () => {
    // A field no action reads is resolved like any other: each template here keeps the answer itself, not a copy.
    const copies = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`copy${i}`, '{{@h:Fetch.data}}']));
    const { result, sent, row } = await fetchThenSend({ httpBody: '{}', copies });
    expect(result.status).toBe('error');
    expect(result.error).toMatch(
      /^Node "Send" \(send\) failed: this step's input is 1\.9\d MB \([\d,]+ characters\) of JSON, and the run has 0\.8\d MB \([\d,]+ characters\) left/,
    );
    expect(sent).toBe(0);
    // Its row shows the config as stored, not the copies.
    expect(row.status).toBe('error');
    expect(JSON.stringify(row.input).length).toBeLessThan(2_000);
  });
});

describe('a For Each past its data limit', () => {
  it('fails before its first iteration when its own config quotes one answer in many fields', async () => {
    const copies = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`copy${i}`, '{{@h:Fetch.data}}']));
    const bigLoop = action('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.items}}', copies });
    const square = action('sq', 'Square', { actionType: 'math/aggregate', operation: 'product', values: '[{{@loop:Loop.currentItem}}, 2]' });
    const { result, logs } = await run(
      [trigger(), fetchBig('h', 'Fetch', 200), bigLoop, square],
      [
        ['t', 'h'],
        ['h', 'loop'],
        ['loop', 'sq'],
      ],
      { items: [1, 2] },
    );
    expect(result.status).toBe('error');
    expect(result.error).toMatch(/^Node "Loop" \(loop\) failed: this step's input is 1\.9\d MB \([\d,]+ characters\) of JSON/);
    expect(logs.find((l) => l.nodeId === 'loop')).toMatchObject({ status: 'error', input: { copies: { copy0: '{{@h:Fetch.data}}' } } });
    expect(logs.some((l) => l.nodeId === 'sq')).toBe(false);
  });
});

describe('jsonLengthWithin', () => {
  it('counts what JSON.stringify would write, without writing it', () => {
    const values: unknown[] = [
      null,
      true,
      false,
      0,
      -12.5,
      1e21,
      'text',
      '',
      [],
      {},
      [1, 'two', null, undefined, () => 3, { three: [3] }],
      { a: 1, skipped: undefined, fn: () => 1, nested: { b: [true, false], c: 'x'.repeat(100) } },
      { when: new Date(0) },
    ];
    for (const value of values) expect(jsonLengthWithin(value, Infinity), JSON.stringify(value)).toBe(JSON.stringify(value).length);
  });

  it('stops at the limit: a value quoting one large string many times is refused without being written', () => {
    const answer = 'x'.repeat(5_000_000);
    const copies = Array.from({ length: 200 }, () => ({ data: answer }));
    expect(jsonLengthWithin(copies, 32 * 1024 * 1024)).toBe(Infinity);
    expect(jsonLengthWithin(copies.slice(0, 2), 32 * 1024 * 1024)).toBe(JSON.stringify(copies.slice(0, 2)).length);
  });

  it('ends on a cycle at the limit instead of looping', () => {
    const cycle: Record<string, unknown> = { name: 'loop' };
    cycle.self = cycle;
    expect(jsonLengthWithin(cycle, 10_000)).toBe(Infinity);
  });
});
