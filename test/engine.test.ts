import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { TRUNCATE_AT_CHARS, truncateLarge } from '../src/engine/truncate.ts';

let gw: TestGateway;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  target = await startHttpTarget();
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1', FLOWGATE_ENGINE_LEASE_MS: '3000' } });
});
afterAll(async () => {
  await gw.close();
  await target.close();
});

const api = (path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key: gw.ownerKey, ...init });
const trigger = (config: Record<string, unknown> = { triggerType: 'Manual' }) => ({ id: 't', type: 'trigger', data: { label: 'Start', config } });
const action = (id: string, label: string, config: Record<string, unknown>) => ({ id, type: 'action', data: { label, config } });

async function createWorkflow(nodes: unknown[], edges: unknown[], extra: Record<string, unknown> = {}) {
  const res = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Engine test', nodes, edges, ...extra }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
}

async function run(workflowId: string, input: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const started = await api(`/api/workflows/${workflowId}/execute`, { method: 'POST', body: JSON.stringify({ input }), headers });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  expect(started.body.status).toBe('running');
  const waited = await api(`/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=20000`);
  expect(waited.status).toBe(200);
  return waited.body;
}

const logsOf = async (executionId: string) => (await api(`/api/workflows/executions/${executionId}/logs`)).body.logs as any[];

describe('running workflows', () => {
  it('runs Manual → HTTP Request → math/aggregate with templates, and logs every step', async () => {
    const id = await createWorkflow(
      [
        trigger(),
        action('fetch', 'Fetch prices', { actionType: 'HTTP Request', endpoint: `${target.url}/prices?for={{@t:Start.symbol}}`, httpMethod: 'GET' }),
        action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '{{@fetch:Fetch prices.data.prices}}' }),
      ],
      [
        { source: 't', target: 'fetch' },
        { source: 'fetch', target: 'sum' },
      ],
    );
    const result = await run(id, { symbol: 'ETH' });
    expect(result).toMatchObject({ status: 'success', completed: true, error: null });
    expect(result.output.result).toMatchObject({ result: 6.75 });
    expect(target.hits.at(-1)!.url).toBe('/prices?for=ETH');

    const logs = await logsOf(result.executionId);
    expect(logs.map((l) => l.nodeId)).toEqual(['sum', 'fetch', 't']);
    const triggerLog = logs.find((l) => l.nodeId === 't');
    expect(triggerLog.output).toMatchObject({
      success: true,
      data: { triggered: true, symbol: 'ETH', triggeredAt: expect.any(String), timestamp: expect.any(Number) },
    });
    const fetchLog = logs.find((l) => l.nodeId === 'fetch');
    expect(fetchLog.input.endpoint).toBe(`${target.url}/prices?for=ETH`);
    expect(fetchLog).toMatchObject({ status: 'success', nodeType: 'HTTP Request', error: null, iterationIndex: null });
    expect(Number(fetchLog.duration)).toBeGreaterThanOrEqual(0);

    const status = await api(`/api/workflows/executions/${result.executionId}/status`);
    expect(status.headers.get('x-poll-interval-hint')).toBe('0');
    expect(status.body.progress).toMatchObject({ totalSteps: 3, completedSteps: 3, percentage: 100 });
    expect(status.body.nodeStatuses).toEqual(expect.arrayContaining([{ nodeId: 'sum', status: 'success' }]));
    expect(status.body).not.toHaveProperty('completed');
  });

  it('routes Condition branches by their true/false handles and logs the untaken branch as not run', async () => {
    const id = await createWorkflow(
      [
        trigger(),
        action('check', 'Check', { actionType: 'Condition', condition: '{{@t:Start.amount}} > 3' }),
        action('yes', 'Big', { actionType: 'math/aggregate', operation: 'sum', values: '[1,1]' }),
        action('no', 'Small', { actionType: 'math/aggregate', operation: 'sum', values: '[2,2]' }),
      ],
      [
        { source: 't', target: 'check' },
        { source: 'check', target: 'yes', sourceHandle: 'true' },
        { source: 'check', target: 'no', sourceHandle: 'false' },
      ],
    );
    const big = await run(id, { amount: 5 });
    expect(big.status).toBe('success');
    const bigLogs = await logsOf(big.executionId);
    expect(bigLogs.find((l) => l.nodeId === 'yes').status).toBe('success');
    expect(bigLogs.find((l) => l.nodeId === 'no')).toMatchObject({ status: 'cancelled', output: { skipped: true } });
    const small = await run(id, { amount: 1 });
    const smallLogs = await logsOf(small.executionId);
    expect(smallLogs.find((l) => l.nodeId === 'no').status).toBe('success');
    expect(smallLogs.find((l) => l.nodeId === 'yes').status).toBe('cancelled');
  });

  it('runs a For Each body per item and collects the outputs in order', async () => {
    const id = await createWorkflow(
      [
        trigger(),
        action('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.items}}', concurrency: 'parallel' }),
        action('double', 'Double', { actionType: 'code/run-code', code: 'return {{@loop:Loop.currentItem}} * 2;' }),
        action('collect', 'Collect', { actionType: 'Collect' }),
        action('total', 'Total', { actionType: 'math/aggregate', operation: 'sum', values: '{{@collect:Collect.results}}', field: 'result' }),
      ],
      [
        { source: 't', target: 'loop' },
        { source: 'loop', target: 'double' },
        { source: 'double', target: 'collect' },
        { source: 'collect', target: 'total' },
      ],
    );
    const result = await run(id, { items: [1, 2, 3, 4] });
    expect(result.status, result.error).toBe('success');
    expect(result.output.result).toMatchObject({ result: 20 });
    const logs = await logsOf(result.executionId);
    const iterations = logs.filter((l) => l.nodeId === 'double');
    expect(iterations.map((l) => l.iterationIndex).sort()).toEqual([0, 1, 2, 3]);
    expect(iterations.every((l) => l.forEachNodeId === 'loop')).toBe(true);
    const collect = logs.find((l) => l.nodeId === 'collect');
    expect(collect.output.results.map((r: any) => r.result)).toEqual([2, 4, 6, 8]);
  });

  it('logs every step of a long For Each, complete and in order, whatever batches its rows were committed in', async () => {
    const count = 150;
    const id = await createWorkflow(
      [
        trigger(),
        action('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.items}}' }),
        action('sq', 'Square', { actionType: 'math/aggregate', operation: 'product', values: '[{{@loop:Loop.currentItem}}, {{@loop:Loop.currentItem}}]' }),
        action('collect', 'Collect', { actionType: 'Collect' }),
        action('check', 'Check', { actionType: 'Condition', condition: '{{@collect:Collect.count}} > 0' }),
      ],
      [
        { source: 't', target: 'loop' },
        { source: 'loop', target: 'sq' },
        { source: 'sq', target: 'collect' },
        { source: 'collect', target: 'check' },
      ],
    );
    const result = await run(id, { items: Array.from({ length: count }, (_, i) => i) });
    expect(result.status, result.error).toBe('success');
    const oldestFirst = (await logsOf(result.executionId)).reverse();
    expect(oldestFirst.map((l) => l.nodeId)).toEqual(['t', 'loop', ...Array.from({ length: count }, () => 'sq'), 'collect', 'check']);
    const iterations = oldestFirst.filter((l) => l.nodeId === 'sq');
    expect(iterations.map((l) => l.iterationIndex)).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(iterations.map((l) => l.output.data.result)).toEqual(Array.from({ length: count }, (_, i) => i * i));
    expect(iterations.every((l) => l.status === 'success' && l.forEachNodeId === 'loop' && l.input.operation === 'product' && l.completedAt !== null)).toBe(
      true,
    );
    expect(oldestFirst.find((l) => l.nodeId === 'loop')).toMatchObject({ status: 'success', output: { iterations: count } });
  });

  it('fails the run with the node’s message when a template points at a missing field', async () => {
    const id = await createWorkflow(
      [trigger(), action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '{{@t:Start.missing}}' })],
      [{ source: 't', target: 'sum' }],
    );
    const result = await run(id, {});
    expect(result.status).toBe('error');
    expect(result.error).toContain('{{@t:Start.missing}}');
    expect(result.error).toContain('Sum');
    const logs = await logsOf(result.executionId);
    expect(logs.find((l) => l.nodeId === 'sum')).toMatchObject({ status: 'error', output: { success: false, error: expect.stringContaining('missing') } });
  });

  it('fails the run naming the For Each whose items template points at a missing field (not an engine failure)', async () => {
    const id = await createWorkflow(
      [
        trigger(),
        action('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.rows}}' }),
        action('sq', 'Square', { actionType: 'math/aggregate', operation: 'product', values: '[{{@loop:Loop.currentItem}}, 2]' }),
      ],
      [
        { source: 't', target: 'loop' },
        { source: 'loop', target: 'sq' },
      ],
    );
    const result = await run(id, { items: [1, 2] });
    expect(result.status).toBe('error');
    expect(result.error).toBe(
      'Node "Loop" (loop) failed: Template {{@t:Start.rows}} refers to "rows", which the output of node "t" does not have. Available fields: triggered, triggeredAt, timestamp, items, success.',
    );
    const logs = await logsOf(result.executionId);
    expect(logs.find((l) => l.nodeId === 'loop')).toMatchObject({ status: 'error', input: { arraySource: '{{@t:Start.rows}}' } });
    expect(logs.some((l) => l.nodeId === 'sq')).toBe(false);
  });

  it('contains sandboxed code that loops forever: the node fails at its limit, the gateway keeps serving', async () => {
    const id = await createWorkflow(
      [trigger(), action('spin', 'Spin', { actionType: 'code/run-code', code: 'while (true) {}', timeout: 300 })],
      [{ source: 't', target: 'spin' }],
    );
    const result = await run(id);
    expect(result.status).toBe('error');
    expect(result.error).toMatch(/time limit/i);
    expect((await api('/healthz')).status).toBe(200);
  });
});

describe('idempotency, legacy path, webhooks', () => {
  let simple: string;
  beforeAll(async () => {
    simple = await createWorkflow(
      [trigger(), action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[1,2]' })],
      [{ source: 't', target: 'sum' }],
    );
  });

  it('replays the same Idempotency-Key and body, and refuses a different body', async () => {
    const headers = { 'Idempotency-Key': `key-${Date.now()}` };
    const first = await api(`/api/workflows/${simple}/execute`, { method: 'POST', body: JSON.stringify({ input: { a: 1 } }), headers });
    const again = await api(`/api/workflows/${simple}/execute`, { method: 'POST', body: JSON.stringify({ input: { a: 1 } }), headers });
    expect(again.body).toMatchObject({ executionId: first.body.executionId, idempotentReplay: true });
    expect(first.body.idempotentReplay).toBeUndefined();
    const conflict = await api(`/api/workflows/${simple}/execute`, { method: 'POST', body: JSON.stringify({ input: { a: 2 } }), headers });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ code: 'idempotency_conflict', retryable: false, originalExecutionId: first.body.executionId });
  });

  it('one key rule on both paths: a header and an argument are trimmed alike, and bad keys are invalid_idempotency_key', async () => {
    const key = `shared-${Date.now()}`;
    const rest = await api(`/api/workflows/${simple}/execute`, {
      method: 'POST',
      body: JSON.stringify({ input: { b: 1 } }),
      headers: { 'Idempotency-Key': `  ${key}\t` },
    });
    expect(rest.status).toBe(200);
    const client = await connectMcp(gw.url, gw.ownerKey);
    try {
      // The same intent over MCP, the key padded differently: the same run, not a second one.
      const mcp = await callTool(client, 'execute_workflow', { workflowId: simple, input: { b: 1 }, idempotency_key: ` ${key} ` });
      expect(mcp.isError).toBe(false);
      expect(mcp.body.executionId).toBe(rest.body.executionId);
      for (const bad of ['   ', 'k'.repeat(256)]) {
        const overMcp = await callTool(client, 'execute_workflow', { workflowId: simple, idempotency_key: bad });
        expect(overMcp.body.code).toBe('invalid_idempotency_key');
        const overRest = await api(`/api/workflows/${simple}/execute`, { method: 'POST', body: '{}', headers: { 'Idempotency-Key': bad } });
        expect(overRest.status).toBe(400);
        expect(overRest.body.code).toBe('invalid_idempotency_key');
      }
    } finally {
      await client.close();
    }
  });

  it('answers the legacy singular path the same, with deprecation headers', async () => {
    const res = await api(`/api/workflow/${simple}/execute`, { method: 'POST', body: JSON.stringify({}) });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('running');
    expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
    const deprecatedAt = Number(res.headers.get('deprecation')!.slice(1)) * 1000;
    expect(Date.parse(res.headers.get('sunset')!) - deprecatedAt).toBeGreaterThanOrEqual(180 * 86_400_000);
    expect(res.headers.get('link')).toContain('rel="deprecation"');
    const modern = await api(`/api/workflows/${simple}/execute`, { method: 'POST', body: JSON.stringify({}) });
    expect(modern.headers.get('deprecation')).toBeNull();
  });

  it('starts Webhook workflows with a wfb_ key, checks the schema, and refuses the wrong workflows', async () => {
    const webhookKey = (await api('/api/api-keys', { method: 'POST', body: JSON.stringify({ name: 'hook' }) })).body.key;
    const schema = JSON.stringify({ type: 'object', required: ['amount'], properties: { amount: { type: 'number' } } });
    const id = await createWorkflow(
      [
        trigger({ triggerType: 'Webhook', webhookSchema: schema }),
        action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[{{@t:Start.body.amount}}, 1]' }),
      ],
      [{ source: 't', target: 'sum' }],
    );
    const hook = (body: unknown, key = webhookKey, wf = id, headers: Record<string, string> = {}) =>
      fetchJson(`${gw.url}/api/workflows/${wf}/webhook?source=test&token=query-secret-1`, { method: 'POST', key, headers, body: JSON.stringify(body) });
    // What a sender authenticates with besides the wfb_ key is not kept with the run either.
    const senderCredentials = {
      'x-api-key': 'partner-secret-2',
      'proxy-authorization': 'Basic cHJveHk6c2VjcmV0',
      'x-hub-signature-256': 'sha256=signature-secret-3',
      'x-request-id': 'kept-4',
    };
    const started = await hook({ amount: 41 }, webhookKey, id, senderCredentials);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const done = (await api(`/api/workflows/executions/${started.body.executionId}/wait`)).body;
    expect(done.status, done.error).toBe('success');
    expect(done.output.result).toMatchObject({ result: 42 });
    const logs = await logsOf(started.body.executionId);
    const triggerOutput = logs.find((l) => l.nodeId === 't').output.data;
    expect(triggerOutput).toMatchObject({ body: { amount: 41 }, method: 'POST', query: { source: 'test', token: '[REDACTED]' } });
    expect(triggerOutput.headers['x-request-id']).toBe('kept-4');
    const run = await api(`/api/workflows/executions/${started.body.executionId}`);
    for (const stored of [JSON.stringify(logs), JSON.stringify(run.body)]) {
      for (const secret of [webhookKey, 'query-secret-1', 'partner-secret-2', 'cHJveHk6c2VjcmV0', 'signature-secret-3']) expect(stored).not.toContain(secret);
    }

    expect((await hook({ amount: 'lots' })).status).toBe(400);
    expect((await hook({ amount: 1 }, webhookKey, simple)).status).toBe(400);
    await api(`/api/workflows/${id}`, { method: 'PATCH', body: JSON.stringify({ enabled: false }) });
    expect((await hook({ amount: 1 })).status).toBe(410);
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: webhookKey })).status).toBe(401);
    const otherOrgKey = await gw.createKey({ org: 'webhook-rival' });
    expect((await hook({ amount: 1 }, otherOrgKey)).status).toBe(404);
  });
});

describe('following runs', () => {
  it('wait times out with completed:false, refuses out-of-range timeouts, and cancel stops a run', async () => {
    const id = await createWorkflow(
      [
        trigger(),
        action('slow', 'Slow call', { actionType: 'HTTP Request', endpoint: `${target.url}/hang`, httpMethod: 'GET', timeout: 15000 }),
        action('after', 'After', { actionType: 'math/aggregate', operation: 'sum', values: '[1]' }),
      ],
      [
        { source: 't', target: 'slow' },
        { source: 'slow', target: 'after' },
      ],
    );
    const started = await api(`/api/workflows/${id}/execute`, { method: 'POST', body: '{}' });
    const executionId = started.body.executionId;
    const early = await api(`/api/workflows/executions/${executionId}/wait?timeoutMs=300`);
    expect(early.body).toMatchObject({ completed: false });
    expect(['pending', 'running']).toContain(early.body.status);
    expect((await api(`/api/workflows/executions/${executionId}/wait?timeoutMs=60001`)).status).toBe(400);
    expect((await api(`/api/workflows/executions/${executionId}/wait?timeoutMs=0`)).status).toBe(400);
    const status = await api(`/api/workflows/executions/${executionId}/status`);
    expect(Number(status.headers.get('x-poll-interval-hint'))).toBeGreaterThan(0);

    const cancel = await api(`/api/workflows/executions/${executionId}/cancel`, { method: 'POST', body: '{}' });
    expect(cancel.status).toBe(200);
    const final = (await api(`/api/workflows/executions/${executionId}/wait?timeoutMs=15000`)).body;
    expect(final).toMatchObject({ status: 'cancelled', completed: true });
    const logs = await logsOf(executionId);
    expect(logs.find((l) => l.nodeId === 'after')).toBeUndefined();
  });

  it('exposes execute, wait, get, list and delete through MCP', async () => {
    const id = await createWorkflow(
      [trigger(), action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[2,3]' })],
      [{ source: 't', target: 'sum' }],
    );
    const client = await connectMcp(gw.url, gw.ownerKey);
    const started = await callTool(client, 'execute_workflow', { workflowId: id, input: { x: 1 }, idempotency_key: `mcp-${Date.now()}` });
    expect(started.isError).toBe(false);
    const progress: number[] = [];
    const waited = await client.callTool({ name: 'wait_for_execution', arguments: { executionId: started.body.executionId } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect((waited.structuredContent as any).status).toBe('success');
    const detail = await callTool(client, 'get_execution', { executionId: started.body.executionId, nodeIds: ['sum'] });
    expect(detail.body.logs.map((l: any) => l.nodeId)).toEqual(['sum']);
    expect(detail.body.completed).toBe(true);
    const listed = await callTool(client, 'list_executions', { workflowId: id });
    expect(listed.body.executions.map((e: any) => e.id)).toContain(started.body.executionId);
    await client.close();

    const removed = await api(`/api/workflows/${id}/executions`, { method: 'DELETE' });
    expect(removed.body).toMatchObject({ success: true, deleted: 1 });
    expect((await api(`/api/workflows/${id}/executions`)).body).toEqual([]);
  });

  it('sends MCP progress notifications while wait_for_execution blocks', async () => {
    const id = await createWorkflow(
      [trigger(), action('slow', 'Slow call', { actionType: 'HTTP Request', endpoint: `${target.url}/hang`, httpMethod: 'GET', timeout: 1500 })],
      [{ source: 't', target: 'slow' }],
    );
    const client = await connectMcp(gw.url, gw.ownerKey);
    const started = await callTool(client, 'execute_workflow', { workflowId: id });
    const notifications: { progress: number; total?: number; message?: string }[] = [];
    const waited = await client.callTool({ name: 'wait_for_execution', arguments: { executionId: started.body.executionId } }, undefined, {
      onprogress: (p) => notifications.push(p),
    });
    await client.close();
    expect((waited.structuredContent as any).status).toBe('error');
    expect(notifications.length).toBeGreaterThan(0);
    expect(notifications[0]).toMatchObject({ total: 2, message: expect.stringMatching(/steps/) });
  });

  it('over MCP a 60 s wait answers completed:false before the client times out, with strictly increasing progress', async () => {
    // Three 25 s steps: still running when the MCP wait gives up at 55 s.
    const hang = (id: string) =>
      action(id, `Slow ${id}`, { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms=25000`, httpMethod: 'GET', timeout: 30000 });
    const id = await createWorkflow(
      [trigger(), hang('h1'), hang('h2'), hang('h3')],
      [
        { source: 't', target: 'h1' },
        { source: 'h1', target: 'h2' },
        { source: 'h2', target: 'h3' },
      ],
    );
    const client = await connectMcp(gw.url, gw.ownerKey);
    const started = await callTool(client, 'execute_workflow', { workflowId: id });
    const notifications: { progress: number; total?: number }[] = [];
    // The SDK client's default request timeout (60 s) applies: no resetTimeoutOnProgress here.
    const waited = await client.callTool({ name: 'wait_for_execution', arguments: { executionId: started.body.executionId, timeoutMs: 60000 } }, undefined, {
      onprogress: (p) => notifications.push(p),
    });
    await callTool(client, 'cancel_execution', { executionId: started.body.executionId });
    await client.close();
    expect(waited.isError).toBeFalsy();
    expect(waited.structuredContent).toMatchObject({ completed: false, status: 'running' });
    expect(notifications.length).toBeGreaterThan(2);
    for (let i = 1; i < notifications.length; i++) expect(notifications[i]!.progress).toBeGreaterThan(notifications[i - 1]!.progress);
    expect(notifications.every((n) => n.total === 4 && n.progress < 4)).toBe(true);
  }, 75_000);

  it('a tools/call with a progressToken is a well-formed SSE stream: progress events, then the result', async () => {
    const id = await createWorkflow(
      [trigger(), action('slow', 'Slow call', { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms=4500`, httpMethod: 'GET', timeout: 10000 })],
      [{ source: 't', target: 'slow' }],
    );
    const started = (await api(`/api/workflows/${id}/execute`, { method: 'POST', body: '{}' })).body;
    const response = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.ownerKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'wait_for_execution', arguments: { executionId: started.executionId }, _meta: { progressToken: 'p-1' } },
      }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    // Parsed by a real SSE parser, as an EventSource-style client reads it.
    const events: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (event) => events.push(event) });
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) parser.feed(decoder.decode(chunk, { stream: true }));
    const messages = events.map((e) => JSON.parse(e.data));
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.every((m) => m.params.progressToken === 'p-1')).toBe(true);
    for (let i = 1; i < progress.length; i++) expect(progress[i].params.progress).toBeGreaterThan(progress[i - 1].params.progress);
    const last = messages.at(-1);
    expect(last.id).toBe(7);
    expect(last.result.structuredContent).toMatchObject({ executionId: started.executionId, status: 'success', completed: true });
  });

  it('truncates large step data in get_execution unless asked not to', async () => {
    const big = 'x'.repeat(10_000);
    const id = await createWorkflow(
      [trigger(), action('echo', 'Echo', { actionType: 'code/run-code', code: `return { text: {{@t:Start.text}} };` })],
      [{ source: 't', target: 'echo' }],
    );
    const result = await run(id, { text: big });
    const client = await connectMcp(gw.url, gw.ownerKey);
    const short = await callTool(client, 'get_execution', { executionId: result.executionId, nodeIds: ['echo'] });
    expect(short.body.logs[0].output).toMatchObject({ _truncated: true, originalSize: expect.any(Number) });
    const full = await callTool(client, 'get_execution', { executionId: result.executionId, nodeIds: ['echo'], truncateData: false });
    expect(JSON.stringify(full.body.logs[0].output)).toContain(big);
    // Shortened from the stored text, it is exactly what shortening the whole value gives.
    expect(short.body.logs[0].output).toEqual(truncateLarge(full.body.logs[0].output));
    expect(short.body.logs[0].input).toEqual(truncateLarge(full.body.logs[0].input));
    expect(short.body.logs[0].output.preview).toBe(JSON.stringify(full.body.logs[0].output).slice(0, TRUNCATE_AT_CHARS));
    await client.close();
  });
});
