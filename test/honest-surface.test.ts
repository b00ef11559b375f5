import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_SLUGS, ACTION_REFERENCE_SLUG } from '../src/docs/site.ts';
import { fetchJson, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/**
 * Issue 12 part B, over the real gateway: it advertises only what runs. Actions
 * without a runner are not enabled and cannot be saved, the catalog hides a
 * workflow that cannot run, and no document claims OAuth, wallet sign-in,
 * unenforced rate limits, private-mempool routing or "being built" features.
 */

let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  key = await gw.createKey({ scope: 'mcp:write', org: 'honest' });
});
afterAll(() => gw.close());

const NOT_RUNNABLE = ['discord/send-message', 'slack/send-message', 'telegram/send-message', 'sendgrid/send-email', 'resend/send-email', 'web3/query-events'];

const discordGraph = {
  nodes: [
    { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', config: { triggerType: 'Manual' } } },
    {
      id: 'notify',
      type: 'action',
      data: { label: 'Tell the team', config: { actionType: 'discord/send-message', integrationId: 'int_1', message: 'hello' } },
    },
  ],
  edges: [{ id: 'e0', source: 'trigger', target: 'notify' }],
};

const api = (p: string, init: RequestInit = {}) => fetchJson(`${gw.url}${p}`, { key, ...init });

describe('actions without a runner', () => {
  it('GET /api/mcp/schemas reports them featureEnabled: false, and the actions that run true', async () => {
    const { status, body } = await fetchJson(`${gw.url}/api/mcp/schemas`);
    expect(status).toBe(200);
    for (const type of NOT_RUNNABLE) expect(body.actions[type].featureEnabled, type).toBe(false);
    for (const type of ['webhook/send-webhook', 'HTTP Request', 'web3/check-balance', 'web3/write-contract', 'For Each', 'code/run-code'])
      expect(body.actions[type].featureEnabled, type).toBe(true);
  });

  it('GET /api/features enables no feature whose actions cannot run', async () => {
    const schemas = (await fetchJson(`${gw.url}/api/mcp/schemas`)).body;
    const { status, body } = await api('/api/features');
    expect(status).toBe(200);
    for (const id of ['notifications-chat', 'notifications-email', 'web3-event-queries']) {
      expect(body.features.find((f: { id: string }) => f.id === id)).toMatchObject({ enabled: false });
      expect(body.enabledFeatureIds).not.toContain(id);
    }
    for (const feature of body.features.filter((f: { enabled: boolean }) => f.enabled)) {
      for (const type of feature.actionTypes) expect(schemas.actions[type].featureEnabled, `${feature.id} ${type}`).toBe(true);
    }
    expect(body.features.find((f: { id: string }) => f.id === 'web3-contracts')).toMatchObject({ enabled: true });
  });

  it('create_workflow (REST) refuses one with an invalidFields entry naming the node, and writes nothing', async () => {
    const before = (await api('/api/workflows')).body.length;
    const res = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Notify', ...discordGraph }) });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_workflow');
    expect(res.body.invalidFields).toContainEqual(
      expect.objectContaining({
        code: 'action_not_available',
        nodeId: 'notify',
        nodeLabel: 'Tell the team',
        path: 'nodes[1].data.config.actionType',
        received: 'discord/send-message',
        message: expect.stringContaining('cannot run on this gateway yet'),
      }),
    );
    expect((await api('/api/workflows')).body.length).toBe(before);
  });

  it('create_workflow and validate_workflow over MCP report the same entry; update refuses it too', async () => {
    const client = await connectMcp(gw.url, key);
    const created = await callTool(client, 'create_workflow', { name: 'Notify', ...discordGraph });
    expect(created.isError).toBe(true);
    expect(created.body.invalidFields).toContainEqual(
      expect.objectContaining({ code: 'action_not_available', nodeId: 'notify', path: 'nodes[1].data.config.actionType' }),
    );
    const validated = await callTool(client, 'validate_workflow', discordGraph);
    expect(validated.isError).toBe(false);
    expect(validated.structured.valid).toBe(false);
    expect(validated.structured.errors).toContainEqual(expect.objectContaining({ code: 'action_not_available', nodeId: 'notify' }));
    await client.close();

    const ok = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Fine', nodes: [discordGraph.nodes[0]], edges: [] }) });
    expect(ok.status).toBe(200);
    const events = {
      nodes: [
        discordGraph.nodes[0],
        {
          id: 'logs',
          type: 'action',
          data: {
            label: 'Logs',
            config: {
              actionType: 'web3/query-events',
              network: '8453',
              contractAddress: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
              abi: '[]',
              eventName: 'Transfer',
            },
          },
        },
      ],
      edges: [{ id: 'e0', source: 'trigger', target: 'logs' }],
    };
    const updated = await api(`/api/workflows/${ok.body.id}`, { method: 'PATCH', body: JSON.stringify(events) });
    expect(updated.status).toBe(400);
    expect(updated.body.invalidFields).toContainEqual(expect.objectContaining({ code: 'action_not_available', nodeId: 'logs', received: 'web3/query-events' }));
    expect((await api(`/api/workflows/${ok.body.id}`)).body.nodes).toHaveLength(1);
  });

  it('a workflow saved before this check is neither found by search nor publishable', async () => {
    const ok = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({ name: 'Legacy discord notifier', nodes: [discordGraph.nodes[0]], edges: [] }),
    });
    // Written straight to the store, as a save from before the check would have left it.
    await gw.gateway.services.store
      .updateTable('workflows')
      .set({
        nodes: JSON.stringify(discordGraph.nodes.map((n) => ({ ...n, position: { x: 0, y: 0 }, data: { ...n.data, type: n.type, status: 'idle' } }))),
        edges: JSON.stringify(discordGraph.edges),
      })
      .where('id', '=', ok.body.id)
      .execute();
    expect((await api(`/api/workflows/${ok.body.id}/go-live`, { method: 'PUT', body: JSON.stringify({ name: 'Legacy discord notifier' }) })).status).toBe(200);

    const search = await fetchJson(`${gw.url}/api/workflows/search?query=${encodeURIComponent('legacy discord')}`);
    expect(search.status).toBe(200);
    expect(search.body.results.map((r: { id: string }) => r.id)).not.toContain(ok.body.id);

    const publish = await api(`/api/workflows/${ok.body.id}/listing`, {
      method: 'POST',
      body: JSON.stringify({
        slug: 'legacy-discord',
        description: 'Posts to Discord.',
        price: null,
        inputSchema: { type: 'object' },
        outputFields: {},
        type: 'read',
      }),
    });
    expect(publish.status).toBe(400);
    expect(publish.body).toMatchObject({ code: 'action_not_available', unavailableActions: ['discord/send-message'] });
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/legacy-discord`)).status).toBe(404);
  });
});

describe('the catalog hides a listing whose steps cannot run (email-send)', () => {
  it('is not listed, priced, described or served', async () => {
    const list = await fetchJson(`${gw.url}/api/mcp/workflows`);
    expect(list.status).toBe(200);
    const slugs = list.body.workflows.map((w: { slug: string }) => w.slug);
    expect(slugs).toContain('helloworld');
    expect(slugs).not.toContain('email-send');

    const openapi = (await fetchJson(`${gw.url}/openapi.json`)).body;
    expect(openapi.paths['/api/mcp/workflows/helloworld/call']).toBeTruthy();
    expect(Object.keys(openapi.paths).filter((p) => p.includes('email-send'))).toEqual([]);
    expect(JSON.stringify((await fetchJson(`${gw.url}/.well-known/x402`)).body)).not.toContain('email-send');

    const search = await fetchJson(`${gw.url}/api/workflows/search?query=${encodeURIComponent('e-mail')}`);
    expect(search.body.results.map((r: { name: string }) => r.name)).not.toContain('Send an e-mail');
    const publicList = await fetchJson(`${gw.url}/api/workflows/public`);
    expect(publicList.body.map((w: { name: string }) => w.name)).not.toContain('Send an e-mail');
  });

  it('calling it answers 404 listing_unavailable saying why, and runs nothing', async () => {
    const runsBefore = await gw.gateway.services.store.selectFrom('workflow_executions').select('id').execute();
    const res = await fetchJson(`${gw.url}/api/mcp/workflows/email-send/call`, { method: 'POST', body: JSON.stringify({ email: 'a@b.co', content: 'hi' }) });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'listing_unavailable', unavailableActions: ['resend/send-email'] });
    expect(res.body.error).toContain('cannot run here yet');
    expect(res.body.error).toContain('resend/send-email');
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/email-send`)).body.code).toBe('listing_unavailable');
    const runsAfter = await gw.gateway.services.store.selectFrom('workflow_executions').select('id').execute();
    expect(runsAfter.length).toBe(runsBefore.length);

    const mcpServer = await fetchJson(`${gw.url}/mcp/w/email-send`, {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      headers: { accept: 'application/json, text/event-stream' },
    });
    expect(mcpServer.status).toBe(404);
    expect(mcpServer.body.code).toBe('listing_unavailable');

    const client = await connectMcp(gw.url);
    const viaMcp = await callTool(client, 'call_workflow', { slug: 'email-send', inputs: { email: 'a@b.co', content: 'hi' } });
    await client.close();
    expect(viaMcp.isError).toBe(true);
    expect(viaMcp.body.code).toBe('listing_unavailable');
  });

  it('a catalog edit that adds a step without a runner unlists the workflow; reverting lists it again, same workflow', async () => {
    const { syncCatalog } = await import('../src/catalog/sync.ts');
    const { loadCatalog } = await import('../src/catalog/load.ts');
    const entries = loadCatalog();
    const before = (await fetchJson(`${gw.url}/api/mcp/workflows/helloworld`)).body;
    const notify = {
      id: 'notify',
      type: 'action',
      data: { label: 'Notify', config: { actionType: 'slack/send-message', integrationId: 'int_1', slackChannel: '#ops', message: 'hi' } },
    };
    const edited = entries.map((e) =>
      e.slug === 'helloworld'
        ? { ...e, workflow: { nodes: [...e.workflow.nodes, notify], edges: [...e.workflow.edges, { id: 'e9', source: 'hello', target: 'notify' }] } }
        : e,
    );
    await syncCatalog(gw.gateway.services, edited);
    const hidden = await fetchJson(`${gw.url}/api/mcp/workflows/helloworld/call`, { method: 'POST', body: '{}' });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toMatchObject({ code: 'listing_unavailable', unavailableActions: ['slack/send-message'] });
    expect((await fetchJson(`${gw.url}/api/mcp/workflows`)).body.workflows.map((w: { slug: string }) => w.slug)).not.toContain('helloworld');
    await syncCatalog(gw.gateway.services, entries);
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/helloworld`)).body).toMatchObject({ slug: 'helloworld', workflowId: before.workflowId });
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/helloworld/call`, { method: 'POST', body: '{}' })).body).toMatchObject({ status: 'success' });
  });

  it('any other problem in a catalog graph still stops the sync, naming the file', async () => {
    const { syncCatalog } = await import('../src/catalog/sync.ts');
    const { loadCatalog } = await import('../src/catalog/load.ts');
    const hello = loadCatalog().find((e) => e.slug === 'helloworld')!;
    const broken = {
      ...hello,
      workflow: {
        nodes: [hello.workflow.nodes[0], { id: 'x', type: 'action', data: { label: 'X', config: { actionType: 'web3/no-such-action' } } }],
        edges: [{ id: 'e0', source: 'trigger', target: 'x' }],
      },
    };
    await expect(syncCatalog(gw.gateway.services, [broken])).rejects.toThrow(/Invalid catalog file helloworld\.json: workflow: .*Unknown actionType/);
  });

  it('an unknown slug is still the plain listing_not_found', async () => {
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/no-such-slug`)).body.code).toBe('listing_not_found');
  });
});

/** Every public document a client reads to learn how to authenticate and what runs here. */
async function publicDocuments(): Promise<Record<string, string>> {
  const jsonPaths = [
    '/openapi.json',
    '/.well-known/mcp.json',
    '/.well-known/mcp',
    '/.well-known/agent-card.json',
    '/.well-known/oauth-protected-resource',
    '/api/mcp/schemas',
    '/api/mcp/tools-documentation',
  ];
  const docs: Record<string, string> = {};
  for (const p of jsonPaths) docs[p] = (await rawGet(`${gw.url}${p}`)).body;
  for (const slug of [...PAGE_SLUGS, ACTION_REFERENCE_SLUG]) docs[`/docs/${slug}`] = (await rawGet(`${gw.url}/docs/${slug}.md`)).body;
  docs['/llms.txt'] = (await rawGet(`${gw.url}/llms.txt`)).body;
  return docs;
}

describe('no claims of what does not exist', () => {
  it('no OAuth token or authorization-server claims, no siwx scheme, no "being built" anywhere', async () => {
    const docs = await publicDocuments();
    for (const [where, text] of Object.entries(docs)) {
      expect(text.length, where).toBeGreaterThan(0);
      // The RFC 9728 metadata URL is the one legitimate mention of the word.
      const lower = text
        .toLowerCase()
        .replaceAll('oauth-protected-resource', '')
        .replaceAll('oauth_protected_resource', '')
        .replaceAll('oauth protected resource', '');
      // Each claim with a little context, so a failure names the sentence rather than dumping the document.
      const claims = [...lower.matchAll(/.{0,60}(oauth|authorization_server|siwx|caip-122|being built).{0,60}/g)].map((m) => m[0]);
      expect(claims, where).toEqual([]);
    }
    const openapi = JSON.parse(docs['/openapi.json']!);
    expect(Object.keys(openapi.components.securitySchemes).sort()).toEqual(['bearerAuth', 'payment', 'sessionCookie']);
  });

  it('the protected-resource metadata lists no authorization server but keeps resource, bearer methods and scopes', async () => {
    const { status, body } = await fetchJson(`${gw.url}/.well-known/oauth-protected-resource`);
    expect(status).toBe(200);
    expect(body).not.toHaveProperty('authorization_servers');
    expect(body).toMatchObject({ resource: `${gw.url}/mcp`, bearer_methods_supported: ['header'], scopes_supported: ['mcp:read', 'mcp:write', 'mcp:admin'] });
    const unauthorized = await fetch(`${gw.url}/api/workflows`, { headers: { authorization: 'Bearer svc_not_a_key' } });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gw.url}/.well-known/oauth-protected-resource"`);
  });

  it('x-rate-limits and /docs/limits list only the enforced limits (wallet sign-in: test/siwe-sessions.test.ts; e-mail sign-up and sign-in: test/email-sign-up.test.ts; step-up: test/step-up.test.ts)', async () => {
    const { body } = await fetchJson(`${gw.url}/openapi.json`);
    expect(body['x-rate-limits'].map((l: { name: string }) => l.name).sort()).toEqual([
      'anonymousWorkflowsPerIp',
      'emailSignInPerIp',
      'emailSignUpPerAddress',
      'emailSignUpPerIp',
      'executePerKey',
      'mcpPerOrganization',
      'mcpPublicCallsPerIp',
      'siweNoncePerIp',
      'siweVerifyPerIp',
      'stepUpPerUserAction',
    ]);
    const limits = (await rawGet(`${gw.url}/docs/limits.md`)).body;
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_SIWE_NONCE_PER_IP');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_STEP_UP_PER_USER_ACTION');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_EXECUTE_PER_KEY');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_ANONYMOUS_WORKFLOWS_PER_IP');
  });

  it('no chain claims a private-mempool RPC: the gateway has no private routing', async () => {
    const { status, body } = await fetchJson(`${gw.url}/api/chains?includeDisabled=true`);
    expect(status).toBe(200);
    expect(body.length).toBeGreaterThan(10);
    expect(body.filter((c: { usePrivateMempoolRpc: boolean }) => c.usePrivateMempoolRpc).map((c: { chainId: number }) => c.chainId)).toEqual([]);
  });
});

describe('/docs/payments', () => {
  it("carries the devnet funding step and the README's @x402/fetch and mppx snippets, with this deployment's base URL", async () => {
    const page = await rawGet(`${gw.url}/docs/payments.md`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('npx flowgate devnet fund <PAYER_ADDRESS> --usdc 10');
    const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Paid workflow calls'), readme.indexOf('\n## ', readme.indexOf('## Paid workflow calls') + 5));
    const snippets = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!.replaceAll('http://localhost:3000', gw.url));
    expect(snippets).toHaveLength(2);
    expect(snippets[0]).toContain("from '@x402/fetch'");
    expect(snippets[1]).toContain("from 'mppx/client'");
    for (const snippet of snippets) expect(page.body).toContain(snippet);
  });
});
