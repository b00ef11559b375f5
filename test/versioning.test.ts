import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../tools/define.ts';
import { DEPRECATIONS, MIN_SUNSET_LEAD_DAYS, usedDeprecations } from '../tools/deprecations.ts';
import { registry } from '../tools/index.ts';
import { balanceGraph, createWorkflowViaApi } from './helpers/workflows.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * A registry entry declaring the `network` request-field deprecation, the way
 * the direct-execution tools do: `network` still works, `chainId` wins.
 */
const chainProbe = defineTool({
  name: 'test_chain_probe',
  title: 'Chain probe (test)',
  description: 'Echoes the chain it was asked for.',
  scope: 'mcp:read',
  input: z.object({ chainId: z.coerce.number().int().optional(), network: z.string().optional() }),
  output: z.object({ chainId: z.number() }),
  rest: { method: 'POST', path: '/api/test/chain-probe' },
  mcp: { annotations: { readOnlyHint: true } },
  deprecations: ['network-field'],
  handler: ({ chainId, network }) => ({ chainId: chainId ?? Number(network) }),
});

let gw: TestGateway;
const DAY = 86_400_000;

beforeAll(async () => {
  gw = await startTestGateway({ tools: [...registry, chainProbe], env: { FLOWGATE_RATE_LIMITS: 'off' } });
});
afterAll(() => gw.close());

const post = (path: string, body: unknown, key = gw.ownerKey) => fetchJson(`${gw.url}${path}`, { method: 'POST', key, body: JSON.stringify(body) });

function expectDeprecated(headers: Headers, docsAnchor: string) {
  const deprecation = headers.get('deprecation');
  expect(deprecation).toMatch(/^@\d+$/);
  const deprecatedAt = Number(deprecation!.slice(1)) * 1000;
  const sunset = Date.parse(headers.get('sunset')!);
  expect(sunset - deprecatedAt).toBeGreaterThanOrEqual(MIN_SUNSET_LEAD_DAYS * DAY);
  expect(headers.get('sunset')).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
  expect(headers.get('link')).toContain(`<${gw.url}/docs/versioning#${docsAnchor}>; rel="deprecation"`);
}

function expectNotDeprecated(headers: Headers) {
  expect(headers.get('deprecation')).toBeNull();
  expect(headers.get('sunset')).toBeNull();
  expect(headers.get('link')).toBeNull();
}

describe('deprecation signals', () => {
  it('the network request field: signalled when sent (still honoured), not when chainId is used', async () => {
    const legacy = await post('/api/test/chain-probe', { network: '8453' });
    expect(legacy.status).toBe(200);
    expect(legacy.body).toEqual({ chainId: 8453 });
    expectDeprecated(legacy.headers, 'network-field');

    const current = await post('/api/test/chain-probe', { chainId: 8453 });
    expect(current.body).toEqual({ chainId: 8453 });
    expectNotDeprecated(current.headers);

    // A refused request that used it is signalled too.
    const refused = await post('/api/test/chain-probe', { network: 8453 });
    expect(refused.status).toBe(400);
    expectDeprecated(refused.headers, 'network-field');
  });

  it('the network field over MCP still works (MCP has no response headers to carry the signal)', async () => {
    const client = await connectMcp(gw.url, gw.ownerKey);
    const { isError, structured } = await callTool(client, 'test_chain_probe', { network: '10' });
    await client.close();
    expect(isError).toBe(false);
    expect(structured).toEqual({ chainId: 10 });
  });

  it('the singular execute path: every response through it, success or not', async () => {
    const { id } = await createWorkflowViaApi(gw.url, gw.ownerKey);
    const ok = await post(`/api/workflow/${id}/execute`, {});
    expect(ok.status).toBe(200);
    expectDeprecated(ok.headers, 'legacy-execute-path');
    const missing = await post('/api/workflow/nope-not-a-workflow/execute', {});
    expect(missing.status).toBe(404);
    expectDeprecated(missing.headers, 'legacy-execute-path');
    const unauthenticated = await fetchJson(`${gw.url}/api/workflow/${id}/execute`, { method: 'POST', body: '{}' });
    expect(unauthenticated.status).toBe(401);
    expectDeprecated(unauthenticated.headers, 'legacy-execute-path');
    expectNotDeprecated((await post(`/api/workflows/${id}/execute`, {})).headers);
  });

  it('the bare execution path: still answers, signalled; /details is the current path', async () => {
    const { id } = await createWorkflowViaApi(gw.url, gw.ownerKey);
    const started = await post(`/api/workflows/${id}/execute`, {});
    const executionId = started.body.executionId as string;
    const legacy = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}`, { key: gw.ownerKey });
    expect(legacy.status).toBe(200);
    expect(legacy.body.execution.id).toBe(executionId);
    expectDeprecated(legacy.headers, 'legacy-execution-path');
    const current = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/details`, { key: gw.ownerKey });
    expect(current.status).toBe(200);
    expect(current.body.execution.id).toBe(executionId);
    expectNotDeprecated(current.headers);
  });

  it('functionName/args workflow fields: signalled on create, update and validate only when a node uses them', async () => {
    const graph = balanceGraph();
    const abi = JSON.stringify([{ type: 'function', name: 'ping', inputs: [], outputs: [], stateMutability: 'nonpayable' }]);
    const legacyNode = {
      id: 'w',
      type: 'web3/write-contract',
      data: { label: 'Write', config: { network: '8453', contractAddress: '0x000000000000000000000000000000000000dEaD', abi, functionName: 'ping' } },
    };
    const legacyGraph = { nodes: [graph.nodes[0], legacyNode], edges: [{ id: 'e', source: 'trigger', target: 'w' }] };

    const created = await post('/api/workflows/create', { name: 'Legacy', ...legacyGraph });
    expect(created.status).toBe(200);
    expectDeprecated(created.headers, 'function-name-fields');

    const modern = await post('/api/workflows/create', { name: 'Modern', ...graph });
    expect(modern.status).toBe(200);
    expectNotDeprecated(modern.headers);

    const validated = await post('/api/workflows/validate', legacyGraph);
    expectDeprecated(validated.headers, 'function-name-fields');
    const argsOnly = structuredClone(legacyGraph);
    const config = argsOnly.nodes[1]!.data.config as Record<string, unknown>;
    delete config.functionName;
    Object.assign(config, { abiFunction: 'ping', args: '[]' });
    expectDeprecated((await post('/api/workflows/validate', argsOnly)).headers, 'function-name-fields');
    expectNotDeprecated((await post('/api/workflows/validate', graph)).headers);

    const updated = await fetchJson(`${gw.url}/api/workflows/${modern.body.id}`, {
      method: 'PATCH',
      key: gw.ownerKey,
      body: JSON.stringify({ nodes: legacyGraph.nodes, edges: legacyGraph.edges }),
    });
    expect(updated.status).toBe(200);
    expectDeprecated(updated.headers, 'function-name-fields');
    const renamed = await fetchJson(`${gw.url}/api/workflows/${modern.body.id}`, {
      method: 'PATCH',
      key: gw.ownerKey,
      body: JSON.stringify({ name: 'Renamed' }),
    });
    expectNotDeprecated(renamed.headers);
  });

  it('no other route carries deprecation headers', async () => {
    const plainGets = registry.filter((t) => t.rest?.method === 'GET' && !t.rest.path.includes(':'));
    expect(plainGets.length).toBeGreaterThan(10);
    for (const tool of plainGets) {
      const res = await fetchJson(`${gw.url}${tool.rest!.path}`, { key: gw.ownerKey });
      expect(res.headers.get('deprecation'), tool.rest!.path).toBeNull();
      expect(res.headers.get('sunset'), tool.rest!.path).toBeNull();
    }
  });

  it('a request using two deprecated things gets one Deprecation/Sunset pair and a Link for each', () => {
    const both = { deprecations: ['network-field', 'function-name-fields'] as const };
    expect(usedDeprecations(both, { network: '1', nodes: [{ data: { config: { functionName: 'f' } } }] })).toEqual(['network-field', 'function-name-fields']);
    expect(usedDeprecations(both, { chainId: 1, nodes: [{ data: { config: { abiFunction: 'f' } } }] })).toEqual([]);
  });
});

describe('x-api-versioning', () => {
  it('is generated from the same declarations, with the operations that accept each', async () => {
    const { body } = await fetchJson(`${gw.url}/openapi.json`);
    const versioning = body['x-api-versioning'];
    expect(versioning.deprecations.map((d: { name: string }) => d.name).sort()).toEqual(Object.keys(DEPRECATIONS).sort());
    const byName = Object.fromEntries(versioning.deprecations.map((d: { name: string }) => [d.name, d]));
    expect(byName['legacy-execute-path']).toMatchObject({
      kind: 'path',
      operations: ['execute_workflow_legacy_path'],
      docs: `${gw.url}/docs/versioning#legacy-execute-path`,
    });
    expect(byName['function-name-fields'].operations.sort()).toEqual(['create_workflow', 'update_workflow', 'validate_workflow']);
    expect(byName['network-field'].operations.sort()).toEqual(['direct_check_and_execute', 'direct_contract_call', 'direct_transfer', 'test_chain_probe']);
    for (const d of versioning.deprecations) expect(Date.parse(d.sunsetAt) - Date.parse(d.deprecatedAt)).toBeGreaterThanOrEqual(MIN_SUNSET_LEAD_DAYS * DAY);

    expect(body.paths['/api/workflow/{workflowId}/execute'].post.deprecated).toBe(true);
    expect(body.paths['/api/workflows/executions/{executionId}'].get.deprecated).toBe(true);
    expect(byName['legacy-execution-path']).toMatchObject({ kind: 'path', operations: ['get_execution_legacy_path'] });
    expect(body.paths['/api/workflows/{workflowId}/execute'].post.deprecated).toBeUndefined();
    const probe = body.paths['/api/test/chain-probe'].post;
    expect(probe.requestBody.content['application/json'].schema.properties.network.deprecated).toBe(true);
    expect(probe.requestBody.content['application/json'].schema.properties.chainId.deprecated).toBeUndefined();
  });
});
