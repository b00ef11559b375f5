import { scrubSecrets } from '../src/text/scrub-secrets.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { startHttpTarget } from './helpers/http-target.ts';

/** Credentials typed into nodes never reach anyone but the owner: not the public graph, not another organization, not the logs. */

let gw: TestGateway;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let rivalKey: string;

beforeAll(async () => {
  target = await startHttpTarget();
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' } });
  rivalKey = await gw.createKey({ org: 'rival' });
});
afterAll(async () => {
  await gw.close();
  await target.close();
});

const api = (path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key: gw.ownerKey, ...init });
const trigger = { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
const action = (id: string, label: string, config: Record<string, unknown>) => ({ id, type: 'action', data: { label, config } });

const SECRETS = ['bearer-secret-1', 'header-key-1', 'custom-auth-1', 'body-password-1', 'query-key-1', 'svc-user', 'userinfo-pass-1'];
const TOKEN_CONFIG = '{"mode":"custom","customToken":{"address":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","symbol":"USDC"}}';

function publishedGraph() {
  return {
    nodes: [
      trigger,
      action('http1', 'Call API', {
        actionType: 'HTTP Request',
        endpoint: 'https://svc-user:userinfo-pass-1@api.example.com/v1/items?api_key=query-key-1&limit=5',
        httpMethod: 'POST',
        httpHeaders: JSON.stringify({
          Authorization: 'Bearer bearer-secret-1',
          'X-Api-Key': 'header-key-1',
          'X-Custom-Auth': 'custom-auth-1',
          Accept: 'application/json',
        }),
        httpBody: JSON.stringify({ username: 'bob', password: 'body-password-1' }),
      }),
      action('bal', 'USDC balance', {
        actionType: 'web3/check-token-balance',
        network: '8453',
        address: '0x000000000000000000000000000000000000dEaD',
        tokenConfig: TOKEN_CONFIG,
      }),
    ],
    edges: [
      { source: 't', target: 'http1' },
      { source: 'http1', target: 'bal' },
    ],
  };
}

const expectNoSecrets = (body: unknown) => {
  const text = JSON.stringify(body);
  for (const secret of SECRETS) expect(text, secret).not.toContain(secret);
};

describe('a published workflow', () => {
  let id: string;
  let live: Awaited<ReturnType<typeof api>>;

  beforeAll(async () => {
    const created = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Keyed API', ...publishedGraph() }) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    id = created.body.id;
    live = await api(`/api/workflows/${id}/go-live`, { method: 'PUT', body: JSON.stringify({ name: 'Keyed API (public)' }) });
  });

  it('go-live answers with the full graph for the owner and every path the public sees redacted', () => {
    expect(live.status, JSON.stringify(live.body)).toBe(200);
    expect(live.body.isOwner).toBe(true);
    expect(live.body.nodes.find((n: any) => n.id === 'http1').data.config.httpHeaders).toContain('bearer-secret-1');
    expect(live.body.redactedPaths.sort()).toEqual(
      [
        'nodes[id=http1].data.config.endpoint@userinfo',
        'nodes[id=http1].data.config.endpoint?api_key',
        'nodes[id=http1].data.config.httpHeaders.Authorization',
        'nodes[id=http1].data.config.httpHeaders.X-Api-Key',
        'nodes[id=http1].data.config.httpHeaders.X-Custom-Auth',
        'nodes[id=http1].data.config.httpBody.password',
      ].sort(),
    );
  });

  it('is listed anonymously without any credential, keeping the rest of the graph', async () => {
    const listing = await fetchJson(`${gw.url}/api/workflows/public`);
    expect(listing.status).toBe(200);
    const shown = listing.body.find((w: any) => w.id === id);
    expect(shown).toBeTruthy();
    expectNoSecrets(listing.body);
    const config = shown.nodes.find((n: any) => n.id === 'http1').data.config;
    expect(config.endpoint).toBe('https://[REDACTED]@api.example.com/v1/items?api_key=[REDACTED]&limit=5');
    expect(JSON.parse(config.httpHeaders)).toEqual({
      Authorization: '[REDACTED]',
      'X-Api-Key': '[REDACTED]',
      'X-Custom-Auth': '[REDACTED]',
      Accept: 'application/json',
    });
    expect(JSON.parse(config.httpBody)).toEqual({ username: 'bob', password: '[REDACTED]' });
    expect(shown.nodes.find((n: any) => n.id === 'bal').data.config).toMatchObject({
      tokenConfig: TOKEN_CONFIG,
      address: '0x000000000000000000000000000000000000dEaD',
    });
  });

  it('reads redacted for another organization over REST and MCP; the owner still sees it all', async () => {
    const asRival = await fetchJson(`${gw.url}/api/workflows/${id}`, { key: rivalKey });
    expect(asRival.status).toBe(200);
    expect(asRival.body.isOwner).toBe(false);
    expectNoSecrets(asRival.body);
    expect(asRival.body.nodes.find((n: any) => n.id === 'bal').data.config.tokenConfig).toBe(TOKEN_CONFIG);

    const client = await connectMcp(gw.url, rivalKey);
    try {
      const viaMcp = await callTool(client, 'get_workflow', { workflowId: id });
      expect(viaMcp.isError).toBe(false);
      expect(viaMcp.body.isOwner).toBe(false);
      expectNoSecrets(viaMcp.body);
      expectNoSecrets(viaMcp.structured);
      const found = await callTool(client, 'search_workflows', { query: 'keyed' });
      expect(found.body.results.map((r: any) => r.id)).toContain(id);
      expectNoSecrets(found.body);
    } finally {
      await client.close();
    }

    const asOwner = await api(`/api/workflows/${id}`);
    expect(asOwner.body.isOwner).toBe(true);
    expect(JSON.stringify(asOwner.body)).toContain('userinfo-pass-1');
  });

  it('an update of the public workflow also lists what the public sees; a private one does not', async () => {
    const graph = publishedGraph();
    const updated = await api(`/api/workflows/${id}`, {
      method: 'PATCH',
      body: JSON.stringify({ nodes: graph.nodes.slice(0, 2), edges: graph.edges.slice(0, 1) }),
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.redactedPaths).toHaveLength(6);
    const other = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'Private', ...graph }) });
    const renamed = await api(`/api/workflows/${other.body.id}`, { method: 'PATCH', body: JSON.stringify({ name: 'Still private' }) });
    expect(renamed.status).toBe(200);
    expect(renamed.body.redactedPaths).toBeUndefined();
  });

  it('cannot be duplicated, downloaded or turned into code by another organization', async () => {
    for (const [method, path] of [
      ['POST', `/api/workflows/${id}/duplicate`],
      ['GET', `/api/workflows/${id}/download`],
      ['GET', `/api/workflows/${id}/code`],
    ]) {
      const res = await fetchJson(`${gw.url}${path}`, { key: rivalKey, method });
      expect(res.status, path).toBe(404);
      expectNoSecrets(res.body);
    }
  });
});

describe('capability URLs (the URL is the credential)', () => {
  it('are hidden from the public graph and another organization: Slack, Discord and Telegram webhooks; the owner still sees them', async () => {
    const hooks = {
      discord: 'https://discord.com/api/webhooks/112233/discord-token-SECRET',
      slack: 'https://hooks.slack.com/services/T0001/B0001/slack-SECRET',
      telegram: 'https://api.telegram.org/bot123456:telegram-SECRET/sendMessage',
    };
    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Hooked',
        nodes: [
          trigger,
          action('discord', 'Tell Discord', {
            actionType: 'webhook/send-webhook',
            webhookUrl: hooks.discord,
            webhookMethod: 'POST',
            webhookPayload: '{"content":"hi"}',
          }),
          action('slack', 'Tell Slack', { actionType: 'HTTP Request', endpoint: hooks.slack, httpMethod: 'POST', httpBody: '{"text":"hi"}' }),
          action('tg', 'Tell Telegram', { actionType: 'HTTP Request', endpoint: hooks.telegram, httpMethod: 'POST' }),
        ],
        edges: [
          { source: 't', target: 'discord' },
          { source: 'discord', target: 'slack' },
          { source: 'slack', target: 'tg' },
        ],
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const live = await api(`/api/workflows/${created.body.id}/go-live`, { method: 'PUT', body: JSON.stringify({ name: 'Hooked' }) });
    expect(live.status, JSON.stringify(live.body)).toBe(200);
    expect(live.body.redactedPaths.sort()).toEqual(
      ['nodes[id=discord].data.config.webhookUrl@path', 'nodes[id=slack].data.config.endpoint@path', 'nodes[id=tg].data.config.endpoint@path'].sort(),
    );
    const asRival = await fetchJson(`${gw.url}/api/workflows/${created.body.id}`, { key: rivalKey });
    const config = (id: string) => asRival.body.nodes.find((n: any) => n.id === id).data.config;
    expect(config('discord').webhookUrl).toBe('https://discord.com/api/webhooks/112233/[REDACTED]');
    expect(config('slack').endpoint).toBe('https://hooks.slack.com/services/[REDACTED]');
    expect(config('tg').endpoint).toBe('https://api.telegram.org/bot[REDACTED]/sendMessage');
    const anonymous = JSON.stringify((await fetchJson(`${gw.url}/api/workflows/public`)).body);
    for (const text of [JSON.stringify(asRival.body), anonymous]) expect(text).not.toMatch(/discord-token-SECRET|slack-SECRET|telegram-SECRET/);
    expect(JSON.stringify((await api(`/api/workflows/${created.body.id}`)).body)).toContain('discord-token-SECRET');
  });
});

describe('execution logs', () => {
  it('hide set-cookie and a token the endpoint echoes back, as well as the credentials sent', async () => {
    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Echoing login',
        nodes: [
          trigger,
          action('login', 'Login', {
            actionType: 'HTTP Request',
            endpoint: `${target.url}/session?api_key=query-key-2`,
            httpMethod: 'POST',
            httpHeaders: JSON.stringify({ Authorization: 'Bearer echo-token-2', 'X-Api-Key': 'header-key-2' }),
            httpBody: JSON.stringify({ user: 'bob', password: 'body-password-2' }),
          }),
        ],
        edges: [{ source: 't', target: 'login' }],
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: '{}' });
    const done = await api(`/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=20000`);
    expect(done.body.status).toBe('success');
    // The endpoint really received (and echoed) the credentials.
    expect(target.hits.at(-1)!.url).toBe('/session?api_key=query-key-2');
    expect(target.hits.at(-1)!.body).toContain('body-password-2');
    // The run's result (what a published workflow's caller gets) does not repeat them either.
    expect(done.body.output.result.headers.authorization).toBe('[REDACTED]');
    for (const secret of ['echo-token-2', 'header-key-2', 'body-password-2', 'query-key-2']) expect(JSON.stringify(done.body), secret).not.toContain(secret);

    const logs = (await api(`/api/workflows/executions/${started.body.executionId}/logs`)).body.logs as any[];
    const login = logs.find((l) => l.nodeId === 'login');
    expect(login.status).toBe('success');
    const text = JSON.stringify(logs);
    for (const secret of ['echo-token-2', 'header-key-2', 'body-password-2', 'query-key-2', 'cookie-secret-3']) expect(text, secret).not.toContain(secret);
    expect(login.output.headers['set-cookie']).toBe('[REDACTED]');
    expect(login.output.headers['content-type']).toBe('application/json');
    expect(login.output.data.headers.authorization).toBe('[REDACTED]');
    expect(login.output.data.headers['x-api-key']).toBe('[REDACTED]');
    expect(login.output.data.url).toBe('/session?api_key=[REDACTED]');
    expect(JSON.parse(login.input.httpHeaders)).toEqual({ Authorization: '[REDACTED]', 'X-Api-Key': '[REDACTED]' });
  });

  it('hide a secret the endpoint quotes encoded: percent-encoded, in base64, and URL credentials as the Basic header carried them', async () => {
    const key = 'k3y+with/slash=and space';
    const password = 'pa ss:word/42';
    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Quoting endpoint',
        nodes: [
          trigger,
          action('quote', 'Quote', {
            actionType: 'HTTP Request',
            endpoint: `${target.url.replace('://', `://bob:${encodeURIComponent(password)}@`)}/quote`,
            httpMethod: 'GET',
            httpHeaders: JSON.stringify({ 'X-Api-Key': key }),
          }),
        ],
        edges: [{ source: 't', target: 'quote' }],
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: '{}' });
    const done = await api(`/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=20000`);
    expect(done.body.status, JSON.stringify(done.body)).toBe('success');
    const logs = JSON.stringify((await api(`/api/workflows/executions/${started.body.executionId}/logs`)).body.logs);
    const forms = [
      encodeURIComponent(key),
      Buffer.from(key).toString('base64'),
      Buffer.from(`bob:${password}`).toString('base64'),
      encodeURIComponent(password),
    ];
    for (const text of [JSON.stringify(done.body), logs]) {
      for (const form of forms) expect(text, form).not.toContain(form);
      expect(text).toContain('received key [REDACTED]');
    }
  });

  it('hide credentials of a step that fails before its templates resolve', async () => {
    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Broken template',
        nodes: [
          trigger,
          action('call', 'Call', {
            actionType: 'HTTP Request',
            endpoint: `${target.url}/echo?q={{@t:Start.missing.deeper}}`,
            httpMethod: 'GET',
            httpHeaders: JSON.stringify({ Authorization: 'Bearer unresolved-secret-4' }),
          }),
        ],
        edges: [{ source: 't', target: 'call' }],
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: '{}' });
    const done = await api(`/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=20000`);
    expect(done.body.status).toBe('error');
    const logs = (await api(`/api/workflows/executions/${started.body.executionId}/logs`)).body.logs as any[];
    const call = logs.find((l) => l.nodeId === 'call');
    expect(call.status).toBe('error');
    expect(JSON.stringify(logs)).not.toContain('unresolved-secret-4');
    expect(JSON.parse(call.input.httpHeaders)).toEqual({ Authorization: '[REDACTED]' });
  });
});

describe('error messages of integrations and notifications (scrubSecrets)', () => {
  it('drop a credential quoted by a provider as sent, percent-encoded, in base64 or inside a URL', () => {
    const token = 'xoxb-1+2/3=secret';
    const message = [
      `invalid token ${token}`,
      `invalid token ${encodeURIComponent(token)}`,
      `bytes ${Buffer.from(token).toString('base64')}`,
      `posted to https://hooks.slack.com/services/T1/B2/${encodeURIComponent('hook+key')}`,
    ].join('; ');
    const scrubbed = scrubSecrets(message, [{ botToken: token, webhookUrl: 'https://hooks.slack.com/services/T1/B2/hook+key' }]);
    for (const form of [token, encodeURIComponent(token), Buffer.from(token).toString('base64'), 'hook+key', 'hook%2Bkey']) {
      expect(scrubbed, form).not.toContain(form);
    }
    expect(scrubbed).toContain('invalid token [redacted]');
  });
});
