import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import {
  CREDENTIALS,
  discordWebhookUrl,
  RATE_LIMITED,
  slackWebhookUrl,
  startProviderServers,
  type Provider,
  type ProviderServers,
} from './helpers/providers.ts';

/**
 * The chat and e-mail steps and the integration tester against local servers
 * speaking each provider's API, through a real gateway: integrations are
 * created over REST with `apiBaseUrl` pointing at the local server (loopback
 * is allowed by FLOWGATE_HTTP_ALLOW_HOSTS, as an operator would list a
 * relay), workflows run over REST, and what the servers received is checked.
 */

let gw: TestGateway;
let fakes: ProviderServers;
const api = (p: string, init: RequestInit = {}) => fetchJson(`${gw.url}${p}`, { key: gw.ownerKey, ...init });
const ALL_SECRETS = [
  CREDENTIALS.discord.token,
  CREDENTIALS.slackBot,
  CREDENTIALS.slackWebhookPath,
  CREDENTIALS.telegram,
  CREDENTIALS.sendgrid,
  CREDENTIALS.resend,
];

beforeAll(async () => {
  fakes = await startProviderServers();
  gw = await startTestGateway({
    env: {
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      // The operator's settings for the catalog's email-send listing, pointed at the local Resend.
      FLOWGATE_CATALOG_RESEND_API_KEY: CREDENTIALS.resend,
      FLOWGATE_CATALOG_EMAIL_FROM: 'catalog@example.com',
      FLOWGATE_CATALOG_RESEND_API_BASE_URL: fakes.resend.url,
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await fakes?.close();
});
beforeEach(() => {
  for (const name of ['discord', 'slack', 'telegram', 'sendgrid', 'resend', 'safe', 'ai-gateway'] as Provider[]) fakes[name].received.length = 0;
});

async function integration(type: string, config: Record<string, unknown>): Promise<string> {
  const res = await api('/api/integrations', { method: 'POST', body: JSON.stringify({ name: `${type} ${Math.random()}`, type, config }) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

const configs = () => ({
  discord: { webhookUrl: discordWebhookUrl(), apiBaseUrl: fakes.discord.url },
  slackBot: { botToken: CREDENTIALS.slackBot, apiBaseUrl: fakes.slack.url },
  slackWebhook: { webhookUrl: slackWebhookUrl(), apiBaseUrl: fakes.slack.url },
  telegram: { botToken: CREDENTIALS.telegram, apiBaseUrl: fakes.telegram.url },
  sendgrid: { apiKey: CREDENTIALS.sendgrid, fromEmail: 'alerts@example.com', fromName: 'Flowgate', apiBaseUrl: fakes.sendgrid.url },
  resend: { apiKey: CREDENTIALS.resend, fromEmail: 'alerts@example.com', fromName: 'Flowgate', apiBaseUrl: fakes.resend.url },
  safe: { apiKey: CREDENTIALS.safe, chainId: 8453, apiBaseUrl: fakes.safe.url },
  'ai-gateway': { apiKey: CREDENTIALS.aiGateway, baseUrl: `${fakes['ai-gateway'].url}/v1` },
});

/** Manual trigger → one step; runs it with `input` and returns the finished run and the step's log row. */
async function runStep(config: Record<string, unknown>, input: Record<string, unknown> = {}) {
  const created = await api('/api/workflows/create', {
    method: 'POST',
    body: JSON.stringify({
      name: 'Notify',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        { id: 'n', type: 'action', data: { label: 'Notify', config } },
      ],
      edges: [{ id: 'e', source: 't', target: 'n' }],
    }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: JSON.stringify({ input }) });
  expect(started.status).toBe(200);
  const run = (await api(`/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=30000`)).body;
  const logs = (await api(`/api/workflows/executions/${started.body.executionId}/logs`)).body.logs as any[];
  return { run, log: logs.find((l) => l.nodeId === 'n') };
}

/** Nothing the gateway answers about a run or an integration contains a credential. */
function expectNoSecret(value: unknown) {
  const text = JSON.stringify(value);
  for (const secret of ALL_SECRETS) expect(text).not.toContain(secret);
}

describe('chat and e-mail steps deliver through the provider APIs', () => {
  it('discord/send-message posts the resolved template to the webhook (wait=true) and returns the message id', async () => {
    const id = await integration('discord', configs().discord);
    const { run, log } = await runStep(
      { actionType: 'discord/send-message', integrationId: id, message: 'Price is {{@t:Start.price}}', username: 'Bot' },
      { price: 42 },
    );
    expect(run.status, JSON.stringify(run)).toBe('success');
    expect(fakes.discord.received).toHaveLength(1);
    const [req] = fakes.discord.received;
    expect(req.path).toBe(`/api/webhooks/${CREDENTIALS.discord.id}/${CREDENTIALS.discord.token}?wait=true`);
    expect(req.body).toMatchObject({ content: 'Price is 42', username: 'Bot', allowed_mentions: { parse: [] } });
    expect(log.output).toMatchObject({ success: true, messageId: expect.any(String), delivery: { attempts: 1, lastStatus: 200 } });
    expect(typeof log.output.delivery.durationMs).toBe('number');
    expectNoSecret([run, log]);
  });

  it('a message over Discord’s 2000 characters is cut with a marker and says so', async () => {
    const id = await integration('discord', configs().discord);
    const { run, log } = await runStep({ actionType: 'discord/send-message', integrationId: id, message: 'x'.repeat(2500) });
    expect(run.status).toBe('success');
    const content = fakes.discord.received[0].body.content as string;
    expect(content).toHaveLength(2000);
    expect(content.endsWith('… [truncated]')).toBe(true);
    expect(log.output.truncated).toBe(true);
  });

  it('slack/send-message uses chat.postMessage with the bot token, or the incoming webhook', async () => {
    const bot = await integration('slack', configs().slackBot);
    const viaBot = await runStep(
      { actionType: 'slack/send-message', integrationId: bot, slackChannel: '#ops', message: 'hi {{@t:Start.who}}' },
      { who: 'ops' },
    );
    expect(viaBot.run.status, JSON.stringify(viaBot.run)).toBe('success');
    expect(fakes.slack.received[0]).toMatchObject({ method: 'POST', path: '/api/chat.postMessage', body: { channel: '#ops', text: 'hi ops' } });
    expect(fakes.slack.received[0].headers.authorization).toBe(`Bearer ${CREDENTIALS.slackBot}`);
    expect(viaBot.log.output.messageId).toBe('1700000000.000100');

    const hook = await integration('slack', configs().slackWebhook);
    const viaHook = await runStep({ actionType: 'slack/send-message', integrationId: hook, message: 'plain' });
    expect(viaHook.run.status).toBe('success');
    expect(fakes.slack.received[1]).toMatchObject({ path: CREDENTIALS.slackWebhookPath, body: { text: 'plain' } });
    expectNoSecret([viaBot, viaHook]);
  });

  it('a Slack Web API refusal (HTTP 200, ok: false) fails the step with Slack’s error', async () => {
    const bot = await integration('slack', { ...configs().slackBot, botToken: 'xoxb-wrong-token-999' });
    const { run, log } = await runStep({ actionType: 'slack/send-message', integrationId: bot, slackChannel: '#ops', message: 'hi' });
    expect(run.status).toBe('error');
    expect(log.error).toContain('invalid_auth');
    expect(JSON.stringify([run, log])).not.toContain('xoxb-wrong-token-999');
  });

  it('telegram/send-message calls sendMessage and returns message_id', async () => {
    const id = await integration('telegram', configs().telegram);
    const { run, log } = await runStep(
      { actionType: 'telegram/send-message', integrationId: id, chatId: '-100123', message: '<b>{{@t:Start.n}}</b>', parseMode: 'HTML' },
      { n: 7 },
    );
    expect(run.status, JSON.stringify(run)).toBe('success');
    expect(fakes.telegram.received[0]).toMatchObject({
      path: `/bot${CREDENTIALS.telegram}/sendMessage`,
      body: { chat_id: '-100123', text: '<b>7</b>', parse_mode: 'HTML' },
    });
    expect(log.output).toMatchObject({ success: true, messageId: '42' });
    expectNoSecret([run, log]);
  });

  it('sendgrid/send-email posts v3 mail/send and returns X-Message-Id; HTML bodies get a text copy', async () => {
    const id = await integration('sendgrid', configs().sendgrid);
    const { run, log } = await runStep(
      {
        actionType: 'sendgrid/send-email',
        integrationId: id,
        emailTo: 'a@example.org, b@example.org',
        emailSubject: 'Hi {{@t:Start.name}}',
        emailBody: '<p>Hello <b>{{@t:Start.name}}</b></p>',
      },
      { name: 'Ada' },
    );
    expect(run.status, JSON.stringify(run)).toBe('success');
    const [req] = fakes.sendgrid.received;
    expect(req).toMatchObject({
      path: '/v3/mail/send',
      body: {
        personalizations: [{ to: [{ email: 'a@example.org' }, { email: 'b@example.org' }] }],
        from: { email: 'alerts@example.com', name: 'Flowgate' },
        subject: 'Hi Ada',
        content: [
          { type: 'text/plain', value: 'Hello Ada' },
          { type: 'text/html', value: '<p>Hello <b>Ada</b></p>' },
        ],
      },
    });
    expect(log.output.messageId).toMatch(/^sg-/);
    expectNoSecret([run, log]);
  });

  it('resend/send-email posts /emails with an Idempotency-Key and returns the id', async () => {
    const id = await integration('resend', configs().resend);
    const { run, log } = await runStep({
      actionType: 'resend/send-email',
      integrationId: id,
      emailTo: 'a@example.org',
      emailSubject: 'S',
      emailBody: 'plain text',
    });
    expect(run.status, JSON.stringify(run)).toBe('success');
    const [req] = fakes.resend.received;
    expect(req).toMatchObject({ path: '/emails', body: { from: 'Flowgate <alerts@example.com>', to: ['a@example.org'], subject: 'S', text: 'plain text' } });
    expect(req.body).not.toHaveProperty('html');
    expect(req.headers['idempotency-key']).toBe(`flowgate:${run.executionId}:n:-`);
    expect(log.output.messageId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a bad recipient fails the step naming emailTo, and nothing is sent', async () => {
    const id = await integration('resend', configs().resend);
    const { run, log } = await runStep({ actionType: 'resend/send-email', integrationId: id, emailTo: 'not-an-address', emailSubject: 'S', emailBody: 'b' });
    expect(run.status).toBe('error');
    expect(log.error).toContain('emailTo');
    expect(fakes.resend.received).toHaveLength(0);
  });
});

describe('delivery semantics', () => {
  it('429 then 200 (Discord retry_after): one message delivered, two attempts in the log', async () => {
    const id = await integration('discord', configs().discord);
    fakes.discord.failNext(RATE_LIMITED.discord);
    const { run, log } = await runStep({ actionType: 'discord/send-message', integrationId: id, message: 'once' });
    expect(run.status, JSON.stringify(run)).toBe('success');
    expect(fakes.discord.received).toHaveLength(2); // the refused attempt and the delivered one
    expect(log.output.delivery).toMatchObject({ attempts: 2, lastStatus: 200 });
  });

  it('Telegram’s parameters.retry_after is waited out before the next attempt', async () => {
    const id = await integration('telegram', configs().telegram);
    fakes.telegram.failNext(RATE_LIMITED.telegram);
    const { run, log } = await runStep({ actionType: 'telegram/send-message', integrationId: id, chatId: '1', message: 'm' });
    expect(run.status).toBe('success');
    expect(log.output.delivery).toMatchObject({ attempts: 2, lastStatus: 200 });
    expect(log.output.delivery.durationMs).toBeGreaterThanOrEqual(1000);
  });

  it('5xx answers are retried with backoff; SendGrid 500 then 202 delivers once', async () => {
    const id = await integration('sendgrid', configs().sendgrid);
    fakes.sendgrid.failNext({ status: 500, body: { errors: [{ message: 'internal error' }] } });
    const { run, log } = await runStep({ actionType: 'sendgrid/send-email', integrationId: id, emailTo: 'a@example.org', emailSubject: 's', emailBody: 'b' });
    expect(run.status).toBe('success');
    expect(log.output.delivery).toMatchObject({ attempts: 2, lastStatus: 202 });
  });

  it('a 401 fails the step at once with the provider’s message and no token', async () => {
    const badToken = 'discord-wrong-token-777';
    const id = await integration('discord', { ...configs().discord, webhookUrl: discordWebhookUrl(badToken) });
    const { run, log } = await runStep({ actionType: 'discord/send-message', integrationId: id, message: 'hi' });
    expect(run.status).toBe('error');
    expect(fakes.discord.received).toHaveLength(1);
    expect(log.error).toContain('Invalid Webhook Token');
    expect(log.error).toContain('HTTP 401');
    expect(log.output.delivery).toMatchObject({ attempts: 1, lastStatus: 401 });
    const text = JSON.stringify([run, log]);
    expect(text).not.toContain(badToken);

    const tg = await integration('telegram', { ...configs().telegram, botToken: '999:wrong-telegram-token' });
    const tgRun = await runStep({ actionType: 'telegram/send-message', integrationId: tg, chatId: '1', message: 'm' });
    expect(tgRun.log.error).toContain('Unauthorized');
    expect(JSON.stringify(tgRun)).not.toContain('wrong-telegram-token');
  });

  it('the egress policy applies to apiBaseUrl: a link-local relay is refused and nothing is sent', async () => {
    const id = await integration('sendgrid', { ...configs().sendgrid, apiBaseUrl: 'http://169.254.169.254' });
    const { run, log } = await runStep({ actionType: 'sendgrid/send-email', integrationId: id, emailTo: 'a@example.org', emailSubject: 's', emailBody: 'b' });
    expect(run.status).toBe('error');
    expect(log.error).toContain('Refused to connect');
    expect(log.output.delivery).toMatchObject({ attempts: 1, lastStatus: null });
  });

  it('a wait the provider asks for beyond the time budget fails the step at once instead of hanging', async () => {
    const id = await integration('discord', configs().discord);
    fakes.discord.failNext({ status: 429, body: { message: 'You are being rate limited.', retry_after: 600, global: true } });
    const started = Date.now();
    const { run, log } = await runStep({ actionType: 'discord/send-message', integrationId: id, message: 'later' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(run.status).toBe('error');
    expect(log.error).toContain('did not accept the message within 60 s');
    expect(log.output.delivery).toMatchObject({ attempts: 1, lastStatus: 429 });
  });

  it('no answer after sending: Resend is asked again with the same Idempotency-Key; Discord, which has none, is not repeated', async () => {
    const resend = await integration('resend', configs().resend);
    fakes.resend.failNext({ reset: true });
    const mail = await runStep({ actionType: 'resend/send-email', integrationId: resend, emailTo: 'a@example.org', emailSubject: 's', emailBody: 'b' });
    expect(mail.run.status, JSON.stringify(mail.log)).toBe('success');
    expect(fakes.resend.received).toHaveLength(2);
    const keys = fakes.resend.received.map((r) => r.headers['idempotency-key']);
    expect(keys[0]).toBe(keys[1]);
    expect(mail.log.output.delivery).toMatchObject({ attempts: 2, lastStatus: 200 });

    const discord = await integration('discord', configs().discord);
    fakes.discord.failNext({ reset: true });
    const chat = await runStep({ actionType: 'discord/send-message', integrationId: discord, message: 'maybe' });
    expect(chat.run.status).toBe('error');
    expect(fakes.discord.received).toHaveLength(1);
    expect(chat.log.error).toContain('not repeated');
    expect(chat.log.output.delivery).toMatchObject({ attempts: 1, lastStatus: null });
  });

  it("another organization's integration id is not found, and nothing is sent", async () => {
    const id = await integration('discord', configs().discord);
    const otherKey = await gw.createKey({ org: 'other-tenant' });
    const created = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      key: otherKey,
      body: JSON.stringify({
        name: 'steal',
        nodes: [
          { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
          { id: 'n', type: 'action', data: { label: 'Notify', config: { actionType: 'discord/send-message', integrationId: id, message: 'x' } } },
        ],
        edges: [{ id: 'e', source: 't', target: 'n' }],
      }),
    });
    expect(created.status).toBe(200);
    const started = await fetchJson(`${gw.url}/api/workflows/${created.body.id}/execute`, { method: 'POST', key: otherKey, body: '{}' });
    const run = (await fetchJson(`${gw.url}/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=20000`, { key: otherKey })).body;
    expect(run.status).toBe('error');
    expect(run.error).toContain('not found');
    expect(fakes.discord.received).toHaveLength(0);
  });

  it('a step names a wrong integration type instead of sending', async () => {
    const id = await integration('resend', configs().resend);
    const { run, log } = await runStep({ actionType: 'discord/send-message', integrationId: id, message: 'hi' });
    expect(run.status).toBe('error');
    expect(log.error).toContain('needs a discord integration');
  });
});

describe('POST /api/integrations/{id}/test contacts every provider', () => {
  const cases: {
    type: string;
    config: () => Record<string, unknown>;
    server: Provider;
    path: RegExp;
    bad: Record<string, unknown>;
    badSecret: string;
    says: string;
  }[] = [
    {
      type: 'telegram',
      config: () => configs().telegram,
      server: 'telegram',
      path: /\/getMe$/,
      bad: { botToken: '1:bad-telegram-token' },
      badSecret: 'bad-telegram-token',
      says: 'Unauthorized',
    },
    {
      type: 'sendgrid',
      config: () => configs().sendgrid,
      server: 'sendgrid',
      path: /^\/v3\/scopes$/,
      bad: { apiKey: 'SG.bad-sendgrid-key' },
      badSecret: 'bad-sendgrid-key',
      says: 'authorization grant is invalid',
    },
    {
      type: 'resend',
      config: () => configs().resend,
      server: 'resend',
      path: /^\/domains$/,
      bad: { apiKey: 're_bad_resend_key' },
      badSecret: 're_bad_resend_key',
      says: 'API key is invalid',
    },
    {
      type: 'slack',
      config: () => configs().slackBot,
      server: 'slack',
      path: /^\/api\/auth\.test$/,
      bad: { botToken: 'xoxb-bad-slack-token' },
      badSecret: 'xoxb-bad-slack-token',
      says: 'invalid_auth',
    },
    {
      type: 'slack',
      config: () => configs().slackWebhook,
      server: 'slack',
      path: /^\/services\//,
      bad: { webhookUrl: slackWebhookUrl('/services/T0001/B0001/badslackhook') },
      badSecret: 'badslackhook',
      says: 'invalid_token',
    },
    {
      type: 'discord',
      config: () => configs().discord,
      server: 'discord',
      path: /^\/api\/webhooks\//,
      bad: { webhookUrl: discordWebhookUrl('bad-discord-token') },
      badSecret: 'bad-discord-token',
      says: 'Invalid Webhook Token',
    },
    {
      type: 'safe',
      config: () => configs().safe,
      server: 'safe',
      path: /^\/tx-service\/base\/api\/v1\/about\/$/,
      bad: { apiKey: 'bad-safe-key' },
      badSecret: 'bad-safe-key',
      says: 'Invalid API key',
    },
    {
      type: 'ai-gateway',
      config: () => configs()['ai-gateway'],
      server: 'ai-gateway',
      path: /^\/v1\/credits$/,
      bad: { apiKey: 'bad-ai-key' },
      badSecret: 'bad-ai-key',
      says: 'Invalid API key',
    },
  ];

  for (const c of cases) {
    it(`${c.type} (${String(c.path)}): success with the saved config, integration_test_failed without secrets under configOverrides`, async () => {
      const id = await integration(c.type, c.config());
      const ok = await api(`/api/integrations/${id}/test`, { method: 'POST', body: '{}' });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(ok.body.status).toBe('success');
      expect(fakes[c.server].received.at(-1)!.path).toMatch(c.path);
      expect(fakes[c.server].received.at(-1)!.method).toBe(c.path.source.includes('services') ? 'POST' : c.type === 'slack' ? 'POST' : 'GET');
      expectNoSecret(ok.body);

      const bad = await api(`/api/integrations/${id}/test`, { method: 'POST', body: JSON.stringify({ configOverrides: c.bad }) });
      expect(bad.status, JSON.stringify(bad.body)).toBe(400);
      expect(bad.body.code).toBe('integration_test_failed');
      expect(bad.body.error).toContain(c.says);
      expect(JSON.stringify(bad.body)).not.toContain(c.badSecret);
      expectNoSecret(bad.body);
      // The saved config is unchanged: the next plain test passes again.
      expect((await api(`/api/integrations/${id}/test`, { method: 'POST', body: '{}' })).body.status).toBe('success');
    });
  }

  it('the Discord check is a GET and posts nothing to the channel', async () => {
    const id = await integration('discord', configs().discord);
    await api(`/api/integrations/${id}/test`, { method: 'POST', body: '{}' });
    expect(fakes.discord.received.map((r) => r.method)).toEqual(['GET']);
  });

  it('an apiBaseUrl override the egress policy refuses fails the test without contacting it', async () => {
    const id = await integration('resend', configs().resend);
    const res = await api(`/api/integrations/${id}/test`, {
      method: 'POST',
      body: JSON.stringify({ configOverrides: { apiBaseUrl: 'http://10.0.0.1', apiKey: 're_override' } }),
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toContain('Refused to connect');
    expect(fakes.resend.received).toHaveLength(0);
  });

  it('apiBaseUrl is returned with the config (it is not a credential) and must be an http(s) URL', async () => {
    const id = await integration('telegram', configs().telegram);
    const got = await api(`/api/integrations/${id}`);
    expect(got.body.config.apiBaseUrl).toBe(fakes.telegram.url);
    expect(got.body.configuredSecrets).toEqual(['botToken']);
    const bad = await api('/api/integrations', {
      method: 'POST',
      body: JSON.stringify({ name: 'x', type: 'telegram', config: { botToken: 't', apiBaseUrl: 'ftp://x' } }),
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('config.apiBaseUrl');
  });
});

describe('the email-send catalog listing', () => {
  it('is listed and sends one e-mail through the catalog organization’s Resend integration', async () => {
    const listing = await fetchJson(`${gw.url}/api/mcp/workflows/email-send`);
    expect(listing.status).toBe(200);
    const res = await fetchJson(`${gw.url}/api/mcp/workflows/email-send/call`, {
      method: 'POST',
      body: JSON.stringify({ email: 'reader@example.org', content: 'Hello from an agent' }),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe('success');
    expect(res.body.output.result).toMatchObject({ messageId: expect.stringMatching(/^[0-9a-f-]{36}$/), delivery: { attempts: 1, lastStatus: 200 } });
    expect(fakes.resend.received).toHaveLength(1);
    expect(fakes.resend.received[0]!.body).toMatchObject({
      from: 'catalog@example.com',
      to: ['reader@example.org'],
      subject: 'Message from a Flowgate agent',
      text: 'Hello from an agent',
    });
    expect(JSON.stringify(res.body)).not.toContain(CREDENTIALS.resend);
  });

  it('the catalog integration is sealed like any other: its key is never returned', async () => {
    const { store } = gw.gateway.services;
    const row = await store.selectFrom('integrations').selectAll().where('name', '=', 'catalog-email').executeTakeFirstOrThrow();
    expect(row.config).not.toContain(CREDENTIALS.resend);
    expect(row.credentials_encrypted).not.toContain(CREDENTIALS.resend);
  });
});
