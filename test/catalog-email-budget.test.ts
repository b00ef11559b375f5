import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { CREDENTIALS, startProviderServers, type ProviderServers } from './helpers/providers.ts';

/**
 * The catalog's email-send listing is free, callable without a key, and sends
 * through the operator's own Resend account. Its sends are counted per
 * recipient and per deployment per day, so neither one address nor the
 * operator's account can be flooded by callers with many addresses or any
 * organization's key. A local server speaks Resend's API.
 */

const PER_RECIPIENT = 2;
const PER_DAY = 3;
let gw: TestGateway;
let fakes: ProviderServers;

beforeAll(async () => {
  fakes = await startProviderServers();
  gw = await startTestGateway({
    env: {
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_CATALOG_RESEND_API_KEY: CREDENTIALS.resend,
      FLOWGATE_CATALOG_EMAIL_FROM: 'catalog@example.com',
      FLOWGATE_CATALOG_RESEND_API_BASE_URL: fakes.resend.url,
      FLOWGATE_RATE_LIMIT_CATALOG_EMAIL_PER_RECIPIENT: String(PER_RECIPIENT),
      FLOWGATE_RATE_LIMIT_CATALOG_EMAIL_PER_DAY: String(PER_DAY),
    },
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await fakes?.close();
});

/** An anonymous call of the listing, as any caller on the internet can make it. */
const send = (email: string) =>
  fetchJson(`${gw.url}/api/mcp/workflows/email-send/call`, { method: 'POST', body: JSON.stringify({ email, content: `Hello ${email}` }) });

const delivered = () => fakes.resend.received.map((r) => (r.body as { to: string[] }).to[0]);

describe('the catalog email-send listing: daily budgets on the operator’s account', () => {
  it('sends at most the per-recipient budget to one address and the deployment budget in all; a refusal says which limit and sends nothing', async () => {
    for (let i = 0; i < PER_RECIPIENT; i++) expect((await send('reader@example.org')).body.status).toBe('success');
    const third = await send('Reader@Example.org');
    expect(third.status).toBe(200);
    expect(third.body.status).toBe('error');
    expect(third.body.error).toContain('Not sent to reader@example.org');
    expect(third.body.error).toContain('FLOWGATE_RATE_LIMIT_CATALOG_EMAIL_PER_RECIPIENT');
    expect(third.body.error).toMatch(/own Resend or SendGrid integration/);
    expect(delivered()).toEqual(['reader@example.org', 'reader@example.org']);

    // Another address still gets its e-mail, until the deployment's day is spent.
    expect((await send('other@example.org')).body.status).toBe('success');
    const over = await send('third@example.org');
    expect(over.body.status).toBe('error');
    expect(over.body.error).toContain('FLOWGATE_RATE_LIMIT_CATALOG_EMAIL_PER_DAY');
    expect(delivered()).toHaveLength(PER_DAY);

    // The counters never hold an address.
    const keys = await gw.gateway.services.store.selectFrom('rate_limits').select('key').execute();
    expect(keys.some((k) => k.key.includes('@'))).toBe(false);
  });

  it("an organization's own Resend integration is not held to the catalog's budgets", async () => {
    const api = (path: string, body: unknown) => fetchJson(`${gw.url}${path}`, { method: 'POST', key: gw.ownerKey, body: JSON.stringify(body) });
    const integration = await api('/api/integrations', {
      name: 'own resend',
      type: 'resend',
      config: { apiKey: CREDENTIALS.resend, fromEmail: 'alerts@example.com', apiBaseUrl: fakes.resend.url },
    });
    expect(integration.status, JSON.stringify(integration.body)).toBe(201);
    const workflow = await api('/api/workflows/create', {
      name: 'Own mail',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        {
          id: 'n',
          type: 'action',
          data: {
            label: 'Mail',
            config: { actionType: 'resend/send-email', integrationId: integration.body.id, emailTo: 'reader@example.org', emailSubject: 'S', emailBody: 'b' },
          },
        },
      ],
      edges: [{ id: 'e', source: 't', target: 'n' }],
    });
    const before = delivered().length;
    const started = await api(`/api/workflows/${workflow.body.id}/execute`, { input: {} });
    const run = await fetchJson(`${gw.url}/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=30000`, { key: gw.ownerKey });
    expect(run.body.status, JSON.stringify(run.body)).toBe('success');
    expect(delivered().slice(before)).toEqual(['reader@example.org']);
  });
});
