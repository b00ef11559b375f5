import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { action, edges, trigger } from './helpers/web3.ts';

/**
 * Outbound requests of workflow steps are capped per organization
 * (FLOWGATE_HTTP_CONCURRENCY_PER_ORG, 3 here) and per process
 * (FLOWGATE_HTTP_CONCURRENCY, 4 here). Without the caps one tenant's For Each
 * runs held 1,600 sockets open to a slow target, and past the process's file
 * descriptors every tenant's steps failed. Here one organization's two runs
 * want 20 requests at once to a server that holds them: it never has more
 * than 3 open, the rest wait (they do not fail), another organization's step
 * takes the one slot left and completes meanwhile, and once the server answers
 * every waiting request is sent and the runs succeed.
 */

/** A target that holds every request under /hold until release(), counting the connections each organization has open. */
async function startHoldingTarget() {
  const open = new Map<string, number>();
  const most = new Map<string, number>();
  const served = new Map<string, number>();
  const held: http.ServerResponse[] = [];
  let released = false;
  let onChange = () => {};
  const answer = (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  const server = http.createServer((req, res) => {
    const org = new URL(req.url ?? '/', 'http://x').searchParams.get('org') ?? '?';
    open.set(org, (open.get(org) ?? 0) + 1);
    most.set(org, Math.max(most.get(org) ?? 0, open.get(org)!));
    served.set(org, (served.get(org) ?? 0) + 1);
    res.on('close', () => {
      open.set(org, open.get(org)! - 1);
      onChange();
    });
    onChange();
    if (req.url?.startsWith('/hold') && !released) held.push(res);
    else answer(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    open: (org: string) => open.get(org) ?? 0,
    most: (org: string) => most.get(org) ?? 0,
    served: (org: string) => served.get(org) ?? 0,
    /** Resolves once `test` holds (checked on every connection opened or closed). */
    until(test: () => boolean): Promise<void> {
      return new Promise((resolve) => {
        onChange = () => {
          if (test()) resolve();
        };
        onChange();
      });
    },
    release() {
      released = true;
      for (const res of held.splice(0)) answer(res);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let gw: TestGateway;
let target: Awaited<ReturnType<typeof startHoldingTarget>>;
let keyB: string;

beforeAll(async () => {
  target = await startHoldingTarget();
  gw = await startTestGateway({
    env: {
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_HTTP_CONCURRENCY: '4',
      FLOWGATE_HTTP_CONCURRENCY_PER_ORG: '3',
    },
  });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await target?.close();
});

const api = (key: string, path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });

async function create(key: string, graph: { nodes: unknown[]; edges: unknown[] }): Promise<string> {
  const res = await api(key, '/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'egress', ...graph }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const execute = async (key: string, workflowId: string) => {
  const res = await api(key, `/api/workflows/${workflowId}/execute`, { method: 'POST', body: '{}' });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.executionId as string;
};
const finished = async (key: string, executionId: string) => (await api(key, `/api/workflows/executions/${executionId}/wait?timeoutMs=60000`)).body;

const fetchStep = (path: string, timeout = 30_000) =>
  action('fetch', 'Fetch', { actionType: 'HTTP Request', endpoint: `${target.url}${path}`, httpMethod: 'GET', timeout });

describe('outbound requests of workflow steps', () => {
  it("keep one organization to its cap while its further requests wait, and another organization's step completes meanwhile", async () => {
    // Ten parallel iterations a run, each a request the target holds.
    const fanOut = await create(gw.ownerKey, {
      nodes: [
        trigger(),
        action('loop', 'Loop', { actionType: 'For Each', arraySource: JSON.stringify([...Array(10).keys()]), concurrency: 'custom', concurrencyLimit: 10 }),
        fetchStep('/hold?org=a&i={{@loop:Loop.currentItem}}'),
        action('col', 'Collect', { actionType: 'Collect' }),
      ],
      edges: edges(['t', 'loop'], ['loop', 'fetch'], ['fetch', 'col']),
    });
    const runs = [await execute(gw.ownerKey, fanOut), await execute(gw.ownerKey, fanOut)];
    await target.until(() => target.open('a') === 3);

    // A request of the same organization past its cap waits; given a 1 ms timeout it ends waiting, saying why.
    const impatient = await create(gw.ownerKey, { nodes: [trigger(), fetchStep('/quick?org=a', 1)], edges: edges(['t', 'fetch']) });
    const refused = await finished(gw.ownerKey, await execute(gw.ownerKey, impatient));
    expect(refused.status).toBe('error');
    expect(refused.error).toContain("this organization's 3 requests were all open (FLOWGATE_HTTP_CONCURRENCY_PER_ORG)");

    // Another organization finds the process's fourth slot free: the first one's 17 waiting requests hold none.
    const quick = await create(keyB, { nodes: [trigger(), fetchStep('/quick?org=b')], edges: edges(['t', 'fetch']) });
    const other = await finished(keyB, await execute(keyB, quick));
    expect(other.status, other.error).toBe('success');
    expect(target.served('b')).toBe(1);
    expect(target.open('a')).toBe(3);

    // The target answers: every waiting request is sent in turn, never more than 3 at once, and both runs succeed.
    target.release();
    for (const run of runs) expect((await finished(gw.ownerKey, run)).status).toBe('success');
    expect(target.served('a')).toBe(20);
    expect(target.most('a')).toBe(3);
  }, 120_000);
});
