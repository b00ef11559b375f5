import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { STDIO_CHECKOUT_PLACEHOLDER } from '../tools/discovery.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { deriveSkills } from '../src/discovery/skills.ts';
import { TOOL_FAMILIES } from '../tools/families.ts';
import { registry } from '../tools/index.ts';
import { connectMcp } from './helpers/mcp.ts';
import { fetchJson, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { schemaErrors, validators } from './helpers/schemas.ts';

const BASE = 'https://flowgate.example.com';
const REGISTRY_ADDRESS = 'eip155:8453:0x8004A169FB4a3325136EB29fA0ceB6D2e539a432';

let gw: TestGateway;
let registered: TestGateway;
beforeAll(async () => {
  // Public base URL differs from the listening address: every document must use the configured one.
  gw = await startTestGateway({ env: { FLOWGATE_BASE_URL: BASE, FLOWGATE_RATE_LIMITS: 'off' } });
  registered = await startTestGateway({ env: { FLOWGATE_BASE_URL: BASE, FLOWGATE_AGENT_ID: '42', FLOWGATE_AGENT_REGISTRY: REGISTRY_ADDRESS } });
});
afterAll(async () => {
  await gw.close();
  await registered.close();
});

const SERVER_CARD_PATHS = ['/.well-known/mcp.json', '/.well-known/mcp/server-card.json', '/mcp/server-card'];

describe('MCP server card', () => {
  it.each(SERVER_CARD_PATHS)('%s validates against the published server-card schema and points at /mcp', async (path) => {
    const { status, body, headers } = await fetchJson(`${gw.url}${path}`);
    expect(status).toBe(200);
    expect(headers.get('content-type')).toContain('application/json');
    expect(schemaErrors(validators.serverCard, body)).toEqual([]);
    expect(body.name).toBe('com.example.flowgate/flowgate');
    expect(body.remotes).toEqual([expect.objectContaining({ type: 'streamable-http', url: `${BASE}/mcp` })]);
    expect(body.remotes[0].supportedProtocolVersions).toContain(LATEST_PROTOCOL_VERSION);
    expect(body.remotes[0].headers[0]).toMatchObject({ name: 'Authorization', isSecret: true, isRequired: false });
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
  });

  it('is the same document at every location', async () => {
    const bodies = await Promise.all(SERVER_CARD_PATHS.map(async (p) => (await fetchJson(`${gw.url}${p}`)).body));
    expect(bodies[1]).toEqual(bodies[0]);
    expect(bodies[2]).toEqual(bodies[0]);
  });

  it('the schema check can fail: a card with a long description or a bad name is refused', async () => {
    const { body } = await fetchJson(`${gw.url}/.well-known/mcp.json`);
    expect(schemaErrors(validators.serverCard, { ...body, description: 'x'.repeat(101) })).not.toEqual([]);
    expect(schemaErrors(validators.serverCard, { ...body, name: 'flowgate' })).not.toEqual([]);
    expect(schemaErrors(validators.serverCard, { ...body, tools: [] })).not.toEqual([]);
  });
});

describe('/.well-known/mcp', () => {
  it('GET describes the transport; POST speaks MCP like /mcp', async () => {
    const { status, body } = await fetchJson(`${gw.url}/.well-known/mcp`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ transport: 'streamable-http', endpoint: `${BASE}/mcp`, serverCard: `${BASE}/.well-known/mcp.json` });
    expect(body.protocolVersions).toContain(LATEST_PROTOCOL_VERSION);

    const client = new Client({ name: 'well-known-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gw.url}/.well-known/mcp`), { requestInit: { headers: { Authorization: `Bearer ${gw.ownerKey}` } } }),
    );
    const viaWellKnown = (await client.listTools()).tools.map((t) => t.name).sort();
    await client.close();
    const direct = await connectMcp(gw.url, gw.ownerKey);
    const viaMcp = (await direct.listTools()).tools.map((t) => t.name).sort();
    await direct.close();
    expect(viaWellKnown).toEqual(viaMcp);
    expect(viaWellKnown.length).toBeGreaterThan(10);
  });

  it('advertises a stdio bridge that runs once its placeholders are filled in', async () => {
    const { stdio } = (await fetchJson(`${gw.url}/.well-known/mcp`)).body;
    expect(stdio).toEqual({
      command: 'node',
      args: [`${STDIO_CHECKOUT_PLACEHOLDER}/bin/flowgate.js`, 'mcp', '--url', BASE],
      env: { FLOWGATE_API_KEY: '<API_KEY>' },
    });
    // This checkout, this key, and the address this test gateway really listens on (BASE is not served here).
    const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
    const args = stdio.args.map((arg: string) => (arg === BASE ? gw.url : arg.replace(STDIO_CHECKOUT_PLACEHOLDER, checkout)));
    const client = new Client({ name: 'stdio-recipe', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: stdio.command, args, env: { ...getDefaultEnvironment(), FLOWGATE_API_KEY: gw.ownerKey } }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('list_workflows');
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('A2A agent card', () => {
  it('validates against the A2A 1.0 card schema and still carries the 0.3 fields older readers use', async () => {
    const { status, body } = await fetchJson(`${gw.url}/.well-known/agent-card.json`);
    expect(status).toBe(200);
    expect(schemaErrors(validators.agentCardV1, body)).toEqual([]);
    expect(schemaErrors(validators.agentCardV03, body)).toEqual([]);
    expect(body.supportedInterfaces[0]).toMatchObject({ url: `${BASE}/mcp`, protocolBinding: 'MCP' });
    expect(body.url).toBe(`${BASE}/mcp`);
    expect(body.protocolVersion).toBe('0.3.0');
    expect(body.securitySchemes.bearer).toMatchObject({ httpAuthSecurityScheme: { scheme: 'Bearer' }, type: 'http', scheme: 'bearer' });
    expect(body).not.toHaveProperty('registrations');
  });

  it('derives its skills from the tool families: every MCP tool a bearer can call is named by exactly one skill, and no other', async () => {
    const { body } = await fetchJson(`${gw.url}/.well-known/agent-card.json`);
    const mcpTools = registry.filter((t) => t.mcp && t.scope !== 'session').map((t) => t.name);
    // Session-only tools (signed-in browsers) are refused to every key and token the card's security scheme names.
    const sessionOnly = registry.filter((t) => t.mcp && t.scope === 'session').map((t) => t.name);
    expect(sessionOnly).toContain('get_run_steps');
    for (const name of sessionOnly) expect(JSON.stringify(body.skills), name).not.toMatch(new RegExp(`\\b${name}\\b`));
    for (const name of mcpTools) {
      const naming = body.skills.filter((s: { description: string }) => new RegExp(`\\b${name}\\b`).test(s.description));
      expect(
        naming.map((s: { id: string }) => s.id),
        name,
      ).toHaveLength(1);
    }
    const skill = (id: string) => body.skills.find((s: { id: string }) => s.id === id);
    expect(skill('executions').tags).toContain('requires-api-key');
    expect(skill('executions').securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    expect(skill('action-catalog').tags).toContain('public');
    expect(skill('workflows').tags).toContain('partly-public'); // create_workflow works anonymously
  });

  it('every MCP tool family is described (a new family needs an entry in tools/families.ts)', () => {
    const ids = deriveSkills(registry, TOOL_FAMILIES).map((s) => s.id);
    expect(ids).toEqual(TOOL_FAMILIES.map((f) => f.id).filter((id) => ids.includes(id)));
  });
});

describe('ERC-8004 registration', () => {
  it('is a 404 naming the variables when no agent id is configured', async () => {
    const { status, body } = await fetchJson(`${gw.url}/.well-known/agent-registration.json`);
    expect(status).toBe(404);
    expect(body).toMatchObject({ code: 'not_configured' });
    expect(body.error).toContain('FLOWGATE_AGENT_ID');
  });

  it('with an agent id: a registration-v1 document, and the agent card lists the registration', async () => {
    const { status, body } = await fetchJson(`${registered.url}/.well-known/agent-registration.json`);
    expect(status).toBe(200);
    expect(schemaErrors(validators.erc8004Registration, body)).toEqual([]);
    expect(body.registrations).toEqual([{ agentId: 42, agentRegistry: REGISTRY_ADDRESS }]);
    expect(body.services).toEqual(
      expect.arrayContaining([
        { name: 'MCP', endpoint: `${BASE}/mcp`, version: expect.any(String) },
        expect.objectContaining({ name: 'A2A', endpoint: `${BASE}/.well-known/agent-card.json` }),
      ]),
    );

    const card = (await fetchJson(`${registered.url}/.well-known/agent-card.json`)).body;
    expect(card.registrations).toEqual([{ agentId: 42, agentRegistry: REGISTRY_ADDRESS }]);
    expect(schemaErrors(validators.agentCardV1, card)).toEqual([]);
  });

  it('refuses half an identity or a malformed registry at start-up', () => {
    expect(() => loadConfig({ FLOWGATE_AGENT_ID: '1' })).toThrow(ConfigError);
    expect(() => loadConfig({ FLOWGATE_AGENT_REGISTRY: REGISTRY_ADDRESS })).toThrow(/FLOWGATE_AGENT_ID/);
    expect(() => loadConfig({ FLOWGATE_AGENT_ID: '1', FLOWGATE_AGENT_REGISTRY: '8453:0xabc' })).toThrow(/FLOWGATE_AGENT_REGISTRY/);
  });
});

describe('caching of discovery documents', () => {
  it.each([...SERVER_CARD_PATHS, '/.well-known/mcp', '/.well-known/agent-card.json', '/.well-known/oauth-protected-resource'])(
    '%s is public, has an ETag and answers If-None-Match with 304',
    async (path) => {
      const first = await rawGet(`${gw.url}${path}`);
      expect(first.status).toBe(200);
      expect(first.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
      const etag = first.headers.etag as string;
      expect(etag).toMatch(/^"/);
      const again = await rawGet(`${gw.url}${path}`, { 'If-None-Match': etag });
      expect(again.status).toBe(304);
      expect(again.body).toBe('');
      const changed = await rawGet(`${gw.url}${path}`, { 'If-None-Match': '"something-else"' });
      expect(changed.status).toBe(200);
    },
  );

  it('needs no credential, and an invalid one is still refused clearly', async () => {
    expect((await fetchJson(`${gw.url}/.well-known/agent-card.json`)).status).toBe(200);
    const bad = await fetchJson(`${gw.url}/.well-known/agent-card.json`, { key: 'svc_not-a-key' });
    expect(bad.status).toBe(401);
  });
});
