import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
});
afterAll(() => gw.close());

async function connect(key?: string) {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : undefined }),
  );
  return client;
}

const rpc = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('MCP at /mcp', () => {
  it('accepts an anonymous initialize and advertises the server', async () => {
    const client = await connect();
    expect(client.getServerVersion()).toMatchObject({ name: 'flowgate' });
    expect(client.getInstructions()).toContain('tools_documentation');
    await client.close();
  });

  it('lists the first tools with input and output schemas and annotations', async () => {
    const client = await connect(gw.ownerKey);
    const { tools } = await client.listTools();
    await client.close();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['list_action_schemas', 'list_chains', 'get_features', 'tools_documentation']));
    const listChains = tools.find((t) => t.name === 'list_chains')!;
    expect(listChains.inputSchema.type).toBe('object');
    expect(listChains.outputSchema?.properties).toHaveProperty('chains');
    expect(listChains.annotations?.readOnlyHint).toBe(true);
  });

  it('calls list_chains with structured content that matches the REST list', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'list_chains', arguments: {} });
    await client.close();
    expect(result.isError).toBeFalsy();
    const chains = (result.structuredContent as { chains: { chainId: number }[] }).chains;
    const rest = await fetchJson(`${gw.url}/api/chains`);
    expect(chains).toEqual(rest.body);
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(result.structuredContent);
  });

  it('calls get_features with a key and list_action_schemas anonymously', async () => {
    const client = await connect(gw.ownerKey);
    const features = await client.callTool({ name: 'get_features', arguments: {} });
    expect(features.structuredContent).toMatchObject({ plan: 'enterprise', billingEnabled: false });
    const schemas = await client.callTool({ name: 'list_action_schemas', arguments: { includeChains: false } });
    expect((schemas.structuredContent as { version: string }).version).toBe('1.0.0');
    await client.close();
  });

  it('returns bad arguments and unknown tools as isError results with a JSON body', async () => {
    const client = await connect();
    const bad = await client.callTool({ name: 'list_chains', arguments: { includeDisabled: 'perhaps' } });
    expect(bad.isError).toBe(true);
    expect(JSON.parse((bad.content as { text: string }[])[0]!.text)).toMatchObject({ code: 'invalid_input' });

    const unknown = await client.callTool({ name: 'list_chain', arguments: {} });
    expect(unknown.isError).toBe(true);
    const body = JSON.parse((unknown.content as { text: string }[])[0]!.text);
    expect(body.code).toBe('unknown_tool');
    expect(body.error).toContain('list_chains');
    await client.close();
  });

  it('answers anonymous calls of key-only tools with an isError unauthorized result', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'get_features', arguments: {} });
    await client.close();
    expect(result.isError).toBe(true);
    expect(JSON.parse((result.content as { text: string }[])[0]!.text).code).toBe('unauthorized');
  });

  it('works for clients that send only Accept: application/json', async () => {
    const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { accept: 'application/json' });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.result.tools.length).toBeGreaterThan(0);
    const noAccept = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(noAccept.status).toBe(200);
  });

  it('answers GET and DELETE with 405 and malformed JSON with a JSON-RPC parse error', async () => {
    expect((await fetch(`${gw.url}/mcp`)).status).toBe(405);
    expect((await fetch(`${gw.url}/mcp`, { method: 'DELETE' })).status).toBe(405);
    const res = await fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":' });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe(-32700);
  });

  it('describes how to use the tools, listing only what the caller may call', async () => {
    const client = await connect();
    const doc = await client.callTool({ name: 'tools_documentation', arguments: {} });
    const content = doc.structuredContent as { recipes: Record<string, string[]>; tools: { name: string }[] };
    expect(content.recipes.directExecution.join(' ')).toMatch(/simulate/i);
    expect(content.tools.map((t) => t.name)).not.toContain('get_features');
    const one = await client.callTool({ name: 'tools_documentation', arguments: { toolName: 'list_chains' } });
    expect((one.structuredContent as { tools: { inputSchema: unknown }[] }).tools[0]!.inputSchema).toBeTruthy();
    await client.close();
  });
});

describe('MCP rate limits', () => {
  it('limits anonymous tools/call per IP with 429, JSON-RPC -32029 and Retry-After', async () => {
    const limited = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_MCP_PUBLIC_CALLS_PER_IP: '3' } });
    try {
      const call = (id: number) =>
        fetch(`${limited.url}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_chains', arguments: {} } }),
        });
      const statuses = [];
      for (let i = 1; i <= 3; i++) statuses.push((await call(i)).status);
      expect(statuses).toEqual([200, 200, 200]);
      const refused = await call(4);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      const body = await refused.json();
      expect(body).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32029 } });
      // tools/list is not a call and stays available.
      const list = await fetch(`${limited.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
      });
      expect(list.status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('limits an organization across all its keys, and FLOWGATE_RATE_LIMITS=off lifts it', async () => {
    for (const [env, expectLimited] of [
      [{ FLOWGATE_RATE_LIMIT_MCP_PER_ORG: '2' }, true],
      [{ FLOWGATE_RATE_LIMIT_MCP_PER_ORG: '2', FLOWGATE_RATE_LIMITS: 'off' }, false],
    ] as const) {
      const limited = await startTestGateway({ env });
      try {
        const second = await limited.createKey({ scope: 'mcp:read' });
        const list = (key: string) =>
          fetch(`${limited.url}/mcp`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
          });
        const statuses = [(await list(limited.ownerKey)).status, (await list(second)).status, (await list(limited.ownerKey)).status];
        expect(statuses).toEqual(expectLimited ? [200, 200, 429] : [200, 200, 200]);
      } finally {
        await limited.close();
      }
    }
  });
});

describe('MCP arguments are never dropped', () => {
  it('an unknown argument is an error with a did-you-mean for the camelCase twin, and nothing runs', async () => {
    const client = await connect(gw.ownerKey);
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = await client.callTool({ name, arguments: args });
        return { isError: result.isError === true, body: JSON.parse((result.content as { text: string }[])[0]!.text) };
      };
      const transfer = await call('execute_transfer', {
        chainId: '31337',
        to_address: '0x000000000000000000000000000000000000dEaD',
        amount: '0.001',
        simulate: true,
      });
      expect(transfer.isError).toBe(true);
      expect(transfer.body.code).toBe('invalid_input');
      expect(transfer.body.error).toContain('"chainId" (did you mean "chain_id"?)');
      expect(transfer.body.issues).toEqual([expect.objectContaining({ path: 'chainId', suggestion: 'chain_id' })]);

      const before = (await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey })).body.length;
      const created = await call('create_workflow', { name: 'typo', nodes: [], edges: [], project_id: 'x' });
      expect(created.isError).toBe(true);
      expect(created.body.error).toContain('did you mean "projectId"?');
      expect((await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey })).body.length).toBe(before);

      const none = await call('get_features', { verbose: true });
      expect(none.isError).toBe(true);
      expect(none.body.error).toContain('get_features takes no arguments');
    } finally {
      await client.close();
    }
  });

  it('a caller without access to a tool learns nothing of its arguments', async () => {
    const client = await connect();
    try {
      const result = await client.callTool({ name: 'execute_transfer', arguments: { chainId: '1' } });
      expect(result.isError).toBe(true);
      const body = JSON.parse((result.content as { text: string }[])[0]!.text);
      expect(body.code).not.toBe('invalid_input');
      expect(JSON.stringify(body)).not.toContain('chain_id');
    } finally {
      await client.close();
    }
  });
});
