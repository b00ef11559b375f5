import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/**
 * The context budget of an agent (README, "Connecting MCP clients"): what a
 * full tools/list and the big discovery answers cost, measured as the
 * JSON-RPC bodies of the real /mcp. Sizes, not timings.
 */

/** A full organization tools/list (owner key, every tool) stays within this many bytes. */
const TOOLS_LIST_BUDGET = 40_000;
/** list_action_schemas with no arguments over MCP (structuredContent plus the same JSON as text). */
const ACTION_SCHEMAS_BUDGET = 40_000;

let gw: TestGateway;
let client: Client;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  client = await connectMcp(gw.url, gw.ownerKey);
  // The SDK client validates structuredContent against the outputSchema it cached from tools/list.
  await client.listTools();
});
afterAll(async () => {
  await client?.close();
  await gw?.close();
});

async function rpc(method: string, params: Record<string, unknown>, key: string | undefined = gw.ownerKey) {
  const response = await fetch(`${gw.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await response.text();
  return { bytes: Buffer.byteLength(text), body: JSON.parse(text) };
}

describe('context budget over MCP', () => {
  it(`keeps a full organization tools/list within ${TOOLS_LIST_BUDGET} bytes, with what an agent needs to call each tool`, async () => {
    const { bytes, body } = await rpc('tools/list', {});
    expect(bytes).toBeLessThanOrEqual(TOOLS_LIST_BUDGET);
    const tools = body.result.tools as { name: string; description: string; inputSchema: any; outputSchema?: any; annotations: any }[];
    expect(tools.length).toBeGreaterThan(40);
    const transfer = tools.find((t) => t.name === 'execute_transfer')!;
    // The contract stays: required arguments, types, argument guidance and the "what next" of the description.
    expect(transfer.inputSchema.required).toEqual(['chain_id', 'to_address', 'amount']);
    expect(transfer.inputSchema.properties.simulate).toEqual({ type: 'boolean' });
    expect(transfer.inputSchema.properties.idempotency_key.description).toMatch(/retry/);
    expect(transfer.description).toMatch(/simulate/);
    expect(transfer.description).toMatch(/get_direct_execution_status/);
    expect(transfer.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    // A nullable argument is still a nullable string (anyOf merged into a type list), and enums stay.
    const update = tools.find((t) => t.name === 'update_workflow')!;
    expect(update.inputSchema.properties.projectId).toEqual({ type: ['string', 'null'] });
    expect(update.inputSchema.properties.visibility.enum).toEqual(['private', 'public']);
    // A node keeps its id, type and required list; its inner data and position objects are plain objects
    // (list_action_schemas documents them, tools_documentation has the full schema).
    const node = update.inputSchema.properties.nodes.items;
    expect(node.required).toEqual(['id', 'type']);
    expect(node.properties.data).toEqual({ type: 'object' });
    const [doc] = (await callTool(client, 'tools_documentation', { toolName: 'update_workflow' })).structured.tools;
    expect(doc.inputSchema.properties.nodes.items.properties.data.properties).toHaveProperty('label');
    // Output schemas name the top-level fields.
    expect(Object.keys(transfer.outputSchema.properties)).toEqual(expect.arrayContaining(['executionId', 'status', 'pollIntervalHint', 'wouldRevert']));
    expect(tools.find((t) => t.name === 'list_workflows')!.outputSchema.properties).toHaveProperty('workflows');
    for (const tool of tools) expect(tool.description.length, tool.name).toBeGreaterThan(40);
  });

  it('answers the full schemas of one tool through tools_documentation', async () => {
    const { isError, structured } = await callTool(client, 'tools_documentation', { toolName: 'get_execution' });
    expect(isError).toBe(false);
    const [doc] = structured.tools;
    expect(doc.inputSchema.properties.executionId).toMatchObject({ type: 'string', minLength: 1, maxLength: 64 });
    // The deep shape tools/list leaves out.
    expect(doc.outputSchema.properties.execution.properties.transactionHashes.items.properties.receiptStatus.enum).toContain('reverted');
  });

  it(`answers list_action_schemas with action summaries within ${ACTION_SCHEMAS_BUDGET} bytes, every field on request`, async () => {
    const summary = await rpc('tools/call', { name: 'list_action_schemas', arguments: {} });
    expect(summary.bytes).toBeLessThanOrEqual(ACTION_SCHEMAS_BUDGET);
    const doc = summary.body.result.structuredContent;
    expect(doc.actions['web3/transfer-funds']).toEqual({
      actionType: 'web3/transfer-funds',
      label: expect.any(String),
      description: expect.any(String),
      category: 'Web3',
      requiredPlan: null,
      featureEnabled: true,
    });
    // Everything else an agent needs to write a workflow is still there.
    expect(Object.keys(doc)).toEqual(expect.arrayContaining(['triggers', 'templateSyntax', 'builtinVariables', 'workflowStructure', 'tips']));
    // The chains are list_chains' job over MCP, unless asked for.
    expect(doc.chains).toBeUndefined();
    const withChains = await callTool(client, 'list_action_schemas', { includeChains: true });
    expect(withChains.structured.chains.length).toBeGreaterThan(3);
    expect(doc.triggers.Schedule.requiredFields).toHaveProperty('scheduleCron');

    const full = await rpc('tools/call', { name: 'list_action_schemas', arguments: { detail: 'full' } });
    expect(full.bytes).toBeGreaterThan(summary.bytes * 2);
    expect(full.body.result.structuredContent.actions['web3/transfer-funds'].requiredFields).toHaveProperty('network');
    // Filters narrow it further.
    const defi = await rpc('tools/call', { name: 'list_action_schemas', arguments: { category: 'DeFi' } });
    expect(Object.values(defi.body.result.structuredContent.actions).every((a: any) => a.category === 'DeFi')).toBe(true);
    expect(defi.bytes).toBeLessThan(summary.bytes);
  });

  it('keeps the text block equal to structuredContent, and passes the SDK client output validation in both detail modes', async () => {
    for (const [name, args] of [
      ['list_action_schemas', {}],
      ['list_action_schemas', { detail: 'full' }],
      ['search_protocol_actions', {}],
      ['search_protocol_actions', { query: 'supply usdc on base' }],
      ['get_plugin', { pluginType: 'aave-v3/supply' }],
      ['get_plugin', { pluginType: 'aave-v3', detail: 'summary' }],
      ['list_chains', {}],
      ['get_execution', { executionId: 'missing' }],
    ] as const) {
      const { isError, body, structured } = await callTool(client, name, args);
      if (name === 'get_execution') {
        // An error stays JSON text, without structured content.
        expect(isError).toBe(true);
        expect(body.code).toBe('not_found');
        continue;
      }
      expect(isError, `${name} ${JSON.stringify(args)}`).toBe(false);
      expect(body).toEqual(structured);
    }
  });

  it('narrows the protocol listing: summaries without a query, full results for a query, one full action from get_plugin', async () => {
    const all = await callTool(client, 'search_protocol_actions', {});
    expect(all.structured.count).toBeGreaterThan(3);
    expect(all.structured.results[0].protocol).toBeUndefined();
    const found = await callTool(client, 'search_protocol_actions', { query: 'supply usdc on base' });
    expect(found.structured.results[0]).toMatchObject({ actionType: 'aave-v3/supply', protocol: { addresses: { '8453': expect.any(String) } } });
    const one = await callTool(client, 'get_plugin', { pluginType: 'aave-v3/supply' });
    expect(one.structured.action.protocol.functionName).toBe('supply');
    expect(one.structured.actions['aave-v3/borrow'].protocol).toBeUndefined();
    expect(one.structured.actions['aave-v3/borrow'].description).toBeTruthy();
  });

  it('leaves the REST documents as SPEC shows them, with detail=summary on request', async () => {
    const full = await fetchJson(`${gw.url}/api/mcp/schemas`);
    expect(full.status).toBe(200);
    expect(full.body.chains.length).toBeGreaterThan(3);
    expect(full.body.actions['web3/transfer-funds'].requiredFields).toHaveProperty('network');
    expect(full.body.actions['aave-v3/supply'].protocol.functionName).toBe('supply');
    const summary = await fetchJson(`${gw.url}/api/mcp/schemas?detail=summary`);
    expect(summary.body.actions['web3/transfer-funds'].requiredFields).toBeUndefined();
    const search = await fetchJson(`${gw.url}/api/mcp/protocol-actions`);
    expect(search.body.results[0].protocol).toBeTruthy();
    const plugin = await fetchJson(`${gw.url}/api/mcp/schemas/aave-v3%2Fsupply`);
    expect(plugin.body.actions['aave-v3/borrow'].protocol).toBeTruthy();
    const refused = await fetchJson(`${gw.url}/api/mcp/schemas?detail=everything`);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('invalid_input');
  });
});
