import { ERROR_CODES } from '../src/errors.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../tools/index.ts';
import { openApiPath } from '../src/http/rest.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
});
afterAll(() => gw.close());

async function listTools(key?: string) {
  const client = new Client({ name: 'surface-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : undefined }),
  );
  const { tools } = await client.listTools();
  await client.close();
  return tools;
}

describe('/openapi.json', () => {
  it('is OpenAPI 3.1.0, version 1.0.0, with the policy extensions and security schemes', async () => {
    const { status, body } = await fetchJson(`${gw.url}/openapi.json`);
    expect(status).toBe(200);
    expect(body.openapi).toBe('3.1.0');
    expect(body.info.version).toBe('1.0.0');
    expect(body.info.license).toEqual({ name: 'MIT', identifier: 'MIT' });
    expect(body.servers[0].url).toBe(gw.url);
    expect(body.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(body.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'flowgate_session' });
    expect(body.paths['/api/auth/session'].get.security).toEqual([{ sessionCookie: [] }]);
    expect(body['x-api-versioning']).toMatchObject({ header: 'Service-Version', supported: ['1'] });
    expect(Object.keys(body['x-error-model'].codes).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(body['x-error-model'].codes.rpc_unavailable).toEqual({ status: 503, meaning: expect.stringContaining('RPC') });
    expect(body['x-rate-limits'].map((l: { name: string }) => l.name)).toEqual(
      expect.arrayContaining(['mcpPerOrganization', 'mcpPublicCallsPerIp', 'executePerKey']),
    );
  });

  it('documents every registry entry that has a REST route, with its parameters and security', async () => {
    const { body } = await fetchJson(`${gw.url}/openapi.json`);
    for (const tool of registry.filter((t) => t.rest)) {
      const op = body.paths[openApiPath(tool.rest!.path)]?.[tool.rest!.method.toLowerCase()];
      expect(op, `${tool.name} ${tool.rest!.method} ${tool.rest!.path}`).toBeTruthy();
      expect(op.operationId).toBe(tool.name);
      // Session-only routes take the cookie alone; key-scoped ones a key, an OAuth token of that scope or (sessions carry no scope) the cookie.
      const expected =
        tool.scope === 'public'
          ? []
          : tool.scope === 'session'
            ? [{ sessionCookie: [] }]
            : tool.scope === 'internal' || tool.scope === 'webhook'
              ? [{ bearerAuth: [] }]
              : [{ bearerAuth: [] }, { oauth2: [tool.scope] }, { sessionCookie: [] }];
      expect(op.security, tool.name).toEqual(expected);
      for (const name of tool.rest!.path.match(/:([A-Za-z0-9_]+)/g) ?? []) {
        expect(op.parameters.some((p: { name: string; in: string }) => p.in === 'path' && p.name === name.slice(1))).toBe(true);
      }
    }
    const abi = body.paths['/api/chains/{chainId}/abi'].get;
    expect(abi.parameters.find((p: { name: string }) => p.name === 'address')).toMatchObject({ in: 'query', required: true });
  });

  it('lists every MCP-exposed entry in tools/list for an unrestricted key', async () => {
    const names = (await listTools(gw.ownerKey)).map((t) => t.name).sort();
    expect(names).toEqual(
      registry
        // Session-only tools (get_run_steps) are listed to signed-in browsers, never to keys (test/analytics.test.ts).
        .filter((t) => t.mcp && t.scope !== 'session')
        .map((t) => t.name)
        .sort(),
    );
  });
});

describe('public surface', () => {
  it('matches the committed snapshot (routes and tool names); update it deliberately', async () => {
    const surface = {
      routes: registry
        .filter((t) => t.rest)
        .map((t) => `${t.rest!.method} ${t.rest!.path} -> ${t.name} [${t.scope}]`)
        .sort(),
      anonymousTools: (await listTools()).map((t) => t.name).sort(),
      organizationTools: (await listTools(gw.ownerKey)).map((t) => t.name).sort(),
    };
    await expect(JSON.stringify(surface, null, 2) + '\n').toMatchFileSnapshot('./__snapshots__/public-surface.json');
  });
});
