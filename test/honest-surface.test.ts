import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_SLUGS, ACTION_REFERENCE_SLUG } from '../src/docs/site.ts';
import { fetchJson, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/**
 * Issue 12 part B, over the real gateway: it advertises only what runs. Since
 * issue 16 every registry action has a runner (test/action-runners.test.ts
 * keeps registry and runners together), so every action is enabled and the
 * catalog lists email-send; no document claims OAuth, wallet sign-in,
 * unenforced rate limits, private-mempool routing or "being built" features.
 */

let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  key = await gw.createKey({ scope: 'mcp:write', org: 'honest' });
});
afterAll(() => gw.close());

/** Turned on by issue 16 ("Notifications that arrive"), once each had a runner and tests. */
const NOW_RUNNABLE = ['discord/send-message', 'slack/send-message', 'telegram/send-message', 'sendgrid/send-email', 'resend/send-email', 'web3/query-events'];

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

describe('every registry action runs here', () => {
  it('GET /api/mcp/schemas reports every action featureEnabled, the chat, e-mail and event-query ones included', async () => {
    const { status, body } = await fetchJson(`${gw.url}/api/mcp/schemas`);
    expect(status).toBe(200);
    for (const type of NOW_RUNNABLE) expect(body.actions[type].featureEnabled, type).toBe(true);
    expect(Object.entries(body.actions).filter(([, a]) => !(a as { featureEnabled: boolean }).featureEnabled)).toEqual([]);
  });

  it('GET /api/features enables the notification and event-query features, and no feature whose actions cannot run', async () => {
    const schemas = (await fetchJson(`${gw.url}/api/mcp/schemas`)).body;
    const { status, body } = await api('/api/features');
    expect(status).toBe(200);
    for (const id of ['notifications-chat', 'notifications-email', 'web3-event-queries']) {
      expect(body.features.find((f: { id: string }) => f.id === id)).toMatchObject({ enabled: true });
      expect(body.enabledFeatureIds).toContain(id);
    }
    for (const feature of body.features.filter((f: { enabled: boolean }) => f.enabled)) {
      for (const type of feature.actionTypes) expect(schemas.actions[type].featureEnabled, `${feature.id} ${type}`).toBe(true);
    }
  });

  it('create_workflow (REST) and validate_workflow (MCP) accept a Discord step', async () => {
    const res = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Notify', ...discordGraph }) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const client = await connectMcp(gw.url, key);
    const validated = await callTool(client, 'validate_workflow', discordGraph);
    await client.close();
    expect(validated.isError).toBe(false);
    expect(validated.structured.valid).toBe(true);
  });
});

describe('the catalog', () => {
  it('lists email-send now that resend/send-email runs (its delivery is tested in notifications.test.ts)', async () => {
    const list = await fetchJson(`${gw.url}/api/mcp/workflows`);
    expect(list.status).toBe(200);
    expect(list.body.workflows.map((w: { slug: string }) => w.slug)).toContain('email-send');
    const openapi = (await fetchJson(`${gw.url}/openapi.json`)).body;
    expect(openapi.paths['/api/mcp/workflows/email-send/call']).toBeTruthy();
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
    '/.well-known/oauth-authorization-server',
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
  it('no siwx scheme, no "being built" anywhere; the OAuth claims name endpoints that answer', async () => {
    const docs = await publicDocuments();
    for (const [where, text] of Object.entries(docs)) {
      expect(text.length, where).toBeGreaterThan(0);
      // Each claim with a little context, so a failure names the sentence rather than dumping the document.
      const claims = [...text.toLowerCase().matchAll(/.{0,60}(siwx|caip-122|being built).{0,60}/g)].map((m) => m[0]);
      expect(claims, where).toEqual([]);
    }
    const openapi = JSON.parse(docs['/openapi.json']!);
    expect(Object.keys(openapi.components.securitySchemes).sort()).toEqual(['bearerAuth', 'oauth2', 'payment', 'sessionCookie']);
    // OAuth works now (test/oauth.test.ts runs it with the MCP SDK client): every endpoint it advertises is served and speaks RFC 6749.
    const metadata = JSON.parse(docs['/.well-known/oauth-authorization-server']!);
    const flow = openapi.components.securitySchemes.oauth2.flows.authorizationCode;
    expect([flow.authorizationUrl, flow.tokenUrl]).toEqual([metadata.authorization_endpoint, metadata.token_endpoint]);
    for (const endpoint of [metadata.token_endpoint, metadata.revocation_endpoint, metadata.registration_endpoint]) {
      const res = await fetchJson(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
      expect(res.status, endpoint).toBe(400);
      expect(typeof res.body.error, endpoint).toBe('string');
    }
    const authorize = await fetchJson(`${metadata.authorization_endpoint}?client_id=unknown`);
    expect(authorize.status).toBe(400);
    expect(authorize.body.error).toBe('invalid_client');
  });

  it('the protected-resource metadata names this gateway as authorization server and keeps resource, bearer methods and scopes', async () => {
    const { status, body } = await fetchJson(`${gw.url}/.well-known/oauth-protected-resource`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      resource: gw.url,
      authorization_servers: [gw.url],
      bearer_methods_supported: ['header'],
      scopes_supported: ['mcp:read', 'mcp:write', 'mcp:admin'],
    });
    const unauthorized = await fetch(`${gw.url}/api/workflows`, { headers: { authorization: 'Bearer svc_not_a_key' } });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gw.url}/.well-known/oauth-protected-resource"`);
  });

  it('x-rate-limits and /docs/limits list only the enforced limits (wallet sign-in: test/siwe-sessions.test.ts; e-mail sign-up and sign-in: test/email-sign-up.test.ts; step-up: test/step-up.test.ts; object writes: test/object-write-limit.test.ts; catalog e-mail: test/catalog-email-budget.test.ts; OAuth authorize: test/oauth-authorize-limit.test.ts; address links: test/email-link-limit.test.ts; REST requests: test/rest-request-limit.test.ts)', async () => {
    const { body } = await fetchJson(`${gw.url}/openapi.json`);
    expect(body['x-rate-limits'].map((l: { name: string }) => l.name).sort()).toEqual([
      'anonymousWorkflowsPerIp',
      'catalogEmailPerDay',
      'catalogEmailPerRecipient',
      'emailLinkPerUser',
      'emailSignInPerIp',
      'emailSignUpPerAddress',
      'emailSignUpPerIp',
      'executePerKey',
      'explorerLookupsPerOrganization',
      'mcpPerOrganization',
      'mcpPublicCallsPerIp',
      'oauthAuthorizePerIp',
      'oauthRegisterPerIp',
      'oauthTokenPerIp',
      'objectWritesPerOrganization',
      'restAnonymousPerIp',
      'restPerOrganization',
      'siweNoncePerIp',
      'siweVerifyPerIp',
      'stepUpPerUserAction',
    ]);
    const limits = (await rawGet(`${gw.url}/docs/limits.md`)).body;
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_SIWE_NONCE_PER_IP');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_STEP_UP_PER_USER_ACTION');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_EXECUTE_PER_KEY');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_EXPLORER_LOOKUPS_PER_ORG');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_REST_PER_ORG');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_ANONYMOUS_WORKFLOWS_PER_IP');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_OBJECT_WRITES_PER_ORG');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_CATALOG_EMAIL_PER_RECIPIENT');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_OAUTH_AUTHORIZE_PER_IP');
    expect(limits).toContain('FLOWGATE_RATE_LIMIT_EMAIL_LINK_PER_USER');
    // Caps that are not request rates: open outbound requests of steps (test/egress-slots.test.ts).
    expect(limits).toContain('FLOWGATE_HTTP_CONCURRENCY_PER_ORG');
    expect(limits).toContain('FLOWGATE_HTTP_CONCURRENCY`');
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
