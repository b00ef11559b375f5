import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * `wait` answers from the run's completion event when it was waiting as the
 * run ended, and from the stored row otherwise: a wait that starts after the
 * end, or a run that another gateway process ran on the same database.
 */

/** An HTTP endpoint that holds each request until the test releases it, and says when one arrives. */
async function startGate() {
  const held: http.ServerResponse[] = [];
  let arrived: () => void = () => {};
  const server = http.createServer((_req, res) => {
    held.push(res);
    arrived();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/gate`,
    /** Resolves once a request is held (at once if one already is). */
    next: () => (held.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (arrived = resolve))),
    release() {
      for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{"opened":true}');
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let gw: TestGateway;
let other: TestGateway;
let gate: Awaited<ReturnType<typeof startGate>>;
let workflowId: string;
const env = { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' };

beforeAll(async () => {
  gate = await startGate();
  gw = await startTestGateway({ env });
  // A second gateway process on the same database: it runs nothing of the first one's, and hears none of its events.
  other = await startTestGateway({ env, dataDir: gw.dataDir });
  const created = await fetchJson(`${gw.url}/api/workflows/create`, {
    key: gw.ownerKey,
    method: 'POST',
    body: JSON.stringify({
      name: 'gated',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        { id: 'g', type: 'action', data: { label: 'Gate', config: { actionType: 'HTTP Request', endpoint: gate.url, httpMethod: 'GET' } } },
        { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[{{@t:Start.n}}, 1]' } } },
      ],
      edges: [
        { source: 't', target: 'g' },
        { source: 'g', target: 's' },
      ],
    }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  workflowId = created.body.id;
}, 60_000);

afterAll(async () => {
  gate.release();
  await other?.close();
  await gw?.close();
  await gate.close();
});

/** Starts a run on `gw` and resolves once it is held at the gate step. */
async function startHeldRun(n: number): Promise<string> {
  const arrived = gate.next();
  const started = await fetchJson(`${gw.url}/api/workflows/${workflowId}/execute`, {
    key: gw.ownerKey,
    method: 'POST',
    body: JSON.stringify({ input: { n } }),
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  await arrived;
  return started.body.executionId;
}

/** Resolves once a `wait` in `on`'s process is subscribed to the run's completion (event order, not time). */
async function subscribed(on: TestGateway, executionId: string): Promise<void> {
  while (!on.gateway.services.engine.events.awaited(executionId)) await new Promise((resolve) => setImmediate(resolve));
}

const wait = (on: TestGateway, executionId: string) =>
  fetchJson(`${on.url}/api/workflows/executions/${executionId}/wait?timeoutMs=60000`, { key: on.ownerKey });
const stored = async (executionId: string) => (await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/logs`, { key: gw.ownerKey })).body.execution;

describe('wait', () => {
  it('a wait in progress when the run ends answers with exactly what the run stored', async () => {
    const executionId = await startHeldRun(41);
    const waiting = wait(gw, executionId);
    await subscribed(gw, executionId);
    gate.release();
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-poll-interval-hint')).toBe('0');
    expect(answer.body).toMatchObject({ executionId, status: 'success', completed: true, error: null, transactionHashes: [], gasUsedWei: null });
    expect(answer.body.output.result).toMatchObject({ result: 42 });
    // The answer came from the completion event; the row says the same, to the millisecond.
    const row = await stored(executionId);
    expect(answer.body.output).toEqual(row.output);
    expect(answer.body.completedAt).toBe(row.completedAt);
  }, 30_000);

  it('a wait that starts after the run ended answers at once from the stored row', async () => {
    const executionId = await startHeldRun(1);
    const ended = new Promise<void>((resolve) => {
      const events = gw.gateway.services.engine.events;
      void events.waitFor(executionId, 60_000).then(() => resolve());
    });
    gate.release();
    await ended;
    const answer = await wait(gw, executionId);
    expect(answer.body).toMatchObject({ executionId, status: 'success', completed: true });
    expect(answer.body.output.result).toMatchObject({ result: 2 });
    expect(answer.body.completedAt).toBe((await stored(executionId)).completedAt);
  }, 30_000);

  it('a run another gateway process ran and finished is seen by a wait here', async () => {
    const executionId = await startHeldRun(9);
    const waiting = wait(other, executionId);
    await subscribed(other, executionId);
    gate.release();
    const answer = await waiting;
    expect(answer.body).toMatchObject({ executionId, status: 'success', completed: true });
    expect(answer.body.output.result).toMatchObject({ result: 10 });
    expect(answer.body.completedAt).toBe((await stored(executionId)).completedAt);
  }, 30_000);

  it('another organization waiting on the run gets 404, before and after it ends', async () => {
    const executionId = await startHeldRun(3);
    const stranger = await gw.createKey({ org: 'stranger' });
    const early = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/wait?timeoutMs=60000`, { key: stranger });
    expect(early.status).toBe(404);
    const ownerWait = wait(gw, executionId);
    await subscribed(gw, executionId);
    gate.release();
    expect((await ownerWait).body.status).toBe('success');
    expect((await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/wait`, { key: stranger })).status).toBe(404);
  }, 30_000);

  it('a cancel sent while a step runs stops the run at the next node boundary: the next step never runs', async () => {
    const executionId = await startHeldRun(5);
    const cancel = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/cancel`, { key: gw.ownerKey, method: 'POST', body: '{}' });
    expect(cancel.body).toMatchObject({ cancelRequested: true, status: 'running' });
    const waiting = wait(gw, executionId);
    await subscribed(gw, executionId);
    gate.release();
    expect((await waiting).body).toMatchObject({ status: 'cancelled', completed: true });
    // Cancelling it again, or any run that has ended, changes nothing and says so.
    const again = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/cancel`, { key: gw.ownerKey, method: 'POST', body: '{}' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ executionId, status: 'cancelled', cancelRequested: false });
    const logs = (await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/logs`, { key: gw.ownerKey })).body.logs as {
      nodeId: string;
      status: string;
    }[];
    expect(logs.find((l) => l.nodeId === 'g')?.status).toBe('success');
    expect(logs.find((l) => l.nodeId === 's')).toBeUndefined();
  }, 30_000);
});
