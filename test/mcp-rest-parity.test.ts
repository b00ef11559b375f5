import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { erc20Abi, type Address } from 'viem';
import { TEST_USDC_ADDRESS } from '../src/chains/devnet/test-usdc.ts';
import { registry } from '../tools/index.ts';
import { z } from 'zod';
import { defineTool, type AnyTool, type TwinFields } from '../tools/define.ts';
import { mcpTwin } from '../tools/mcp-twin.ts';
import { inputJsonSchema } from '../tools/json-schema.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { randomAddress } from './helpers/web3.ts';

/**
 * One operation, two transports. An MCP twin (tools/mcp-twin.ts) takes exactly
 * its REST operation's inputs under the declared snake_case names, and the
 * same request through REST and MCP gets the same answer. Read from the live
 * /openapi.json and tools/list, so neither transport can drift on its own.
 */

type Json = Record<string, any>;
let chain: TestChain;
let gw: TestGateway;
let mcp: Client;
let wallet: Address;
let openapi: Json;
let mcpTools: Map<string, Json>;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RATE_LIMITS: 'off' } });
  const org = await gw.gateway.services.organizations.ensure('default');
  wallet = (await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as Address;
  mcp = await connectMcp(gw.url, gw.ownerKey);
  mcpTools = new Map((await mcp.listTools()).tools.map((t) => [t.name, t as Json]));
  openapi = (await fetchJson(`${gw.url}/openapi.json`)).body;
});

afterAll(async () => {
  await mcp?.close();
  await gw?.close();
  await chain?.stop();
});

/** The input names a REST operation takes, as /openapi.json publishes them: path and query parameters and body fields. */
function restInputs(operationId: string): { names: string[]; body: Json } {
  for (const methods of Object.values(openapi.paths as Json)) {
    for (const op of Object.values(methods as Json) as Json[]) {
      if (op.operationId !== operationId) continue;
      const body = op.requestBody?.content?.['application/json']?.schema ?? { properties: {} };
      const params = ((op.parameters ?? []) as Json[]).filter((p) => p.in === 'path' || p.in === 'query').map((p) => p.name as string);
      return { names: [...params, ...Object.keys(body.properties ?? {})], body };
    }
  }
  throw new Error(`no REST operation ${operationId} in /openapi.json`);
}

const mcpArguments = (name: string) => {
  const tool = mcpTools.get(name);
  if (!tool) throw new Error(`${name} is not in tools/list`);
  return tool.inputSchema as Json;
};

const sorted = (names: Iterable<string>) => [...names].sort();
const newName = (rename: TwinFields[string]) => (typeof rename === 'string' ? rename : rename.as);
const twins = registry.filter((t): t is AnyTool & { twin: NonNullable<AnyTool['twin']> } => t.twin !== undefined);
// Session-only tools are not in a key's tools/list; they are plain entries, the same names on both transports by construction.
const dualBound = registry.filter((t) => t.rest && t.mcp && !t.twin && t.scope !== 'session');

describe('every MCP tool takes exactly the inputs of its REST operation', () => {
  test('the hand-mapped pairs of old are generated twins', () => {
    expect(Object.fromEntries(twins.map((t) => [t.name, t.twin.of]))).toEqual({
      execute_transfer: 'direct_transfer',
      execute_contract_call: 'direct_contract_call',
      execute_check_and_execute: 'direct_check_and_execute',
      call_workflow: 'call_workflow_by_slug',
    });
  });

  test.each(twins.map((t) => [t.name, t] as const))('%s: REST names map onto MCP names, nothing missing, nothing extra', (name, tool) => {
    const { fields, restOnly, mcpOnly } = tool.twin;
    const rest = restInputs(tool.twin.of);
    // Every REST input is renamed or declared REST-only ...
    expect(sorted(rest.names)).toEqual(sorted([...Object.keys(fields), ...restOnly]));
    // ... and the MCP arguments are exactly the renamed ones plus the declared MCP-only ones.
    const args = mcpArguments(name);
    expect(sorted(Object.keys(args.properties))).toEqual(sorted([...Object.values(fields).map(newName), ...mcpOnly]));
    // Nested objects (check-and-execute's action) too.
    for (const [key, rename] of Object.entries(fields)) {
      if (typeof rename === 'string') continue;
      const restNested = Object.keys(rest.body.properties[key].properties);
      expect(sorted(restNested)).toEqual(sorted([...Object.keys(rename.fields), ...(rename.restOnly ?? [])]));
      expect(sorted(Object.keys(args.properties[rename.as].properties))).toEqual(sorted(Object.values(rename.fields).map(newName)));
    }
    // What REST requires, MCP requires under its MCP name.
    const restRequired = new Set<string>(rest.body.required ?? []);
    for (const [key, rename] of Object.entries(fields)) if (restRequired.has(key)) expect(args.required).toContain(newName(rename));
  });

  test.each(twins.map((t) => [t.name, t] as const))('%s: each argument has the validator of its REST field', (_name, tool) => {
    const restTool = registry.find((t) => t.name === tool.twin.of)!;
    const restProps = inputJsonSchema(restTool).properties as Json;
    const mcpProps = inputJsonSchema(tool).properties as Json;
    const withoutText = (schema: Json): Json => JSON.parse(JSON.stringify(schema, (k, v) => (k === 'description' || k === 'required' ? undefined : v)));
    for (const [key, rename] of Object.entries(tool.twin.fields)) {
      if (typeof rename === 'string') expect(withoutText(mcpProps[rename]), key).toEqual(withoutText(restProps[key]));
      else
        for (const [inner, to] of Object.entries(rename.fields))
          expect(withoutText(mcpProps[rename.as].properties[newName(to)])).toEqual(withoutText(restProps[key].properties[inner]));
    }
  });

  test('a REST field added without an MCP name or a REST-only declaration stops the gateway from starting', () => {
    const rest = defineTool({
      name: 'rest_op',
      title: 'x',
      description: 'x',
      input: z.object({ chainId: z.number(), memo: z.string().optional() }),
      output: z.object({}),
      scope: 'mcp:read',
      rest: { method: 'POST', path: '/x' },
      handler: () => ({}),
    });
    const twin = { name: 'mcp_op', title: 'x', description: 'x', mcp: { annotations: {} } };
    expect(() => mcpTwin(rest, { ...twin, fields: { chainId: 'chain_id' } })).toThrow(/memo have no MCP name/);
    expect(() => mcpTwin(rest, { ...twin, fields: { chainId: 'chain_id' }, restOnly: ['memo', 'network'] })).toThrow(/network declared REST-only/);
    expect(() => mcpTwin(rest, { ...twin, fields: { chainId: 'chain_id' }, restOnly: ['memo'] })).not.toThrow();
  });

  test('a tool bound to both transports takes the same names on both', () => {
    expect(dualBound.length).toBeGreaterThan(10);
    for (const tool of dualBound) {
      expect(sorted(Object.keys(mcpArguments(tool.name).properties ?? {})), tool.name).toEqual(sorted(restInputs(tool.name).names));
    }
  });
});

describe('the same request through both transports gets the same answer', () => {
  const post = (path: string, body: unknown) => fetchJson(`${gw.url}${path}`, { method: 'POST', body: JSON.stringify(body), key: gw.ownerKey });
  const usdcAbi = JSON.stringify(erc20Abi);

  test('a simulated transfer on anvil', async () => {
    const to = randomAddress();
    const rest = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001', simulate: true });
    const viaMcp = await callTool(mcp, 'execute_transfer', { chain_id: 31337, to_address: to, amount: '0.001', simulate: true });
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ success: true, status: 'simulated', from: wallet, wouldRevert: false });
    expect(viaMcp.isError).toBe(false);
    expect(viaMcp.structured).toEqual(rest.body);
  });

  test('a simulated ERC-20 transfer (token_address) and a contract read', async () => {
    const to = randomAddress();
    const rest = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '1.5', tokenAddress: TEST_USDC_ADDRESS, simulate: true });
    const viaMcp = await callTool(mcp, 'execute_transfer', {
      chain_id: 31337,
      to_address: to,
      amount: '1.5',
      token_address: TEST_USDC_ADDRESS,
      simulate: true,
    });
    expect(rest.body).toMatchObject({ status: 'simulated', success: true });
    expect(viaMcp.structured).toEqual(rest.body);

    const read = { contractAddress: TEST_USDC_ADDRESS, functionName: 'balanceOf', functionArgs: JSON.stringify([wallet]), abi: usdcAbi };
    const restRead = await post('/api/execute/contract-call', { chainId: 31337, ...read });
    const mcpRead = await callTool(mcp, 'execute_contract_call', {
      chain_id: 31337,
      contract_address: read.contractAddress,
      function_name: read.functionName,
      function_args: read.functionArgs,
      abi: read.abi,
    });
    expect(restRead.status).toBe(200);
    expect(restRead.body).toMatchObject({ type: 'read', functionName: 'balanceOf' });
    expect(mcpRead.structured).toEqual(restRead.body);
  });

  test('a simulated check-and-execute, whose nested action is renamed too', async () => {
    const spender = randomAddress();
    const rest = await post('/api/execute/check-and-execute', {
      chainId: 31337,
      contractAddress: TEST_USDC_ADDRESS,
      functionName: 'allowance',
      functionArgs: JSON.stringify([wallet, spender]),
      abi: usdcAbi,
      condition: { operator: 'eq', value: 0 },
      action: { contractAddress: TEST_USDC_ADDRESS, functionName: 'approve', functionArgs: JSON.stringify([spender, '7']), abi: usdcAbi },
      simulate: true,
    });
    const viaMcp = await callTool(mcp, 'execute_check_and_execute', {
      chain_id: 31337,
      contract_address: TEST_USDC_ADDRESS,
      function_name: 'allowance',
      function_args: JSON.stringify([wallet, spender]),
      abi: usdcAbi,
      condition: { operator: 'eq', value: 0 },
      action: { contract_address: TEST_USDC_ADDRESS, function_name: 'approve', function_args: JSON.stringify([spender, '7']), abi: usdcAbi },
      simulate: true,
    });
    expect(rest.body).toMatchObject({ status: 'simulated', success: true, conditionMet: true });
    expect(viaMcp.structured).toEqual(rest.body);
  });

  test('a workflow call by slug: the REST body is the MCP inputs', async () => {
    const rest = await post('/api/mcp/workflows/settle-v1/call', { jobId: 'job-42' });
    const viaMcp = await callTool(mcp, 'call_workflow', { slug: 'settle-v1', inputs: { jobId: 'job-42' } });
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ type: 'calldata', data: expect.stringMatching(/^0x/) });
    expect(viaMcp.isError).toBe(false);
    expect(viaMcp.body).toEqual(rest.body);

    // The workflow's own input schema refuses the same way on both.
    const restMissing = await post('/api/mcp/workflows/settle-v1/call', {});
    const mcpMissing = await callTool(mcp, 'call_workflow', { slug: 'settle-v1', inputs: {} });
    expect(restMissing.status).toBe(400);
    expect(mcpMissing.body).toEqual(restMissing.body);
    expect(mcpMissing.body.issues[0].path).toBe('jobId');
  });

  test('a refusal has the same code and names the same field (under its MCP name where the schema speaks)', async () => {
    // The domain's refusal: a bad checksum, named by its REST field on both transports.
    const badChecksum = '0x8Ba1f109551bD432803012645Ac136ddd64DBA72';
    const rest = await post('/api/execute/transfer', { chainId: 31337, recipientAddress: badChecksum, amount: '1' });
    const viaMcp = await callTool(mcp, 'execute_transfer', { chain_id: 31337, to_address: badChecksum, amount: '1' });
    expect(rest.status).toBe(400);
    expect(viaMcp.isError).toBe(true);
    expect(viaMcp.body).toEqual(rest.body);

    // The schema's refusal: a missing required field, named by each transport's own name for it.
    const restMissing = await post('/api/execute/transfer', { chainId: 31337, amount: '1' });
    const mcpMissing = await callTool(mcp, 'execute_transfer', { chain_id: 31337, amount: '1' });
    expect(restMissing.status).toBe(400);
    expect(restMissing.body.code).toBe('invalid_input');
    expect(mcpMissing.body.code).toBe('invalid_input');
    expect(restMissing.body.issues.map((i: Json) => i.path)).toEqual(['recipientAddress']);
    expect(mcpMissing.body.issues.map((i: Json) => i.path)).toEqual(['to_address']);

    // A nested one: the action's contract address.
    const restNested = await post('/api/execute/check-and-execute', {
      chainId: 31337,
      contractAddress: TEST_USDC_ADDRESS,
      functionName: 'totalSupply',
      condition: { operator: 'gt', value: 0 },
      action: { functionName: 'approve' },
    });
    const mcpNested = await callTool(mcp, 'execute_check_and_execute', {
      chain_id: 31337,
      contract_address: TEST_USDC_ADDRESS,
      function_name: 'totalSupply',
      condition: { operator: 'gt', value: 0 },
      action: { function_name: 'approve' },
    });
    expect(restNested.body.issues.map((i: Json) => i.path)).toEqual(['action.contractAddress']);
    expect(mcpNested.body.issues.map((i: Json) => i.path)).toEqual(['action.contract_address']);
  });

  test('the deprecated network field still selects the chain over REST, and MCP names chain_id instead', async () => {
    const to = randomAddress();
    const rest = await fetchJson(`${gw.url}/api/execute/transfer`, {
      method: 'POST',
      body: JSON.stringify({ network: 31337, recipientAddress: to, amount: '0.001', simulate: true }),
      key: gw.ownerKey,
    });
    expect(rest.status).toBe(200);
    expect(rest.headers.get('deprecation')).toMatch(/^@\d+$/);
    const viaMcp = await callTool(mcp, 'execute_transfer', { network: 31337, to_address: to, amount: '0.001', simulate: true });
    expect(viaMcp.isError).toBe(true);
    expect(viaMcp.body.code).toBe('invalid_input');
    expect(viaMcp.body.message ?? viaMcp.body.error).toMatch(/network/);
  });
});
