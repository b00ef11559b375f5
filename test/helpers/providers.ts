import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';

/**
 * Local HTTP servers speaking the public APIs of the notification providers
 * (and the Safe transaction service and AI gateway identity endpoints): the
 * same paths, auth headers, status codes and body shapes, rate-limit answers
 * included. The gateway reaches them through `apiBaseUrl` (or the webhook
 * URL) over real HTTP; nothing is stubbed in-process.
 *
 * Credentials each fake accepts are in CREDENTIALS; any other is refused the
 * way the provider refuses it. `failNext(provider, ...answers)` queues
 * answers (429s, 500s) served before the normal handling.
 */

export const CREDENTIALS = {
  discord: { id: '1180000000000000001', token: 'discord-webhook-token-abcdef' },
  slackWebhookPath: '/services/T0001/B0001/slackhooksecret123',
  slackBot: 'xoxb-slack-bot-token-123',
  telegram: '123456:telegram-bot-token-ABC',
  sendgrid: 'SG.sendgrid-api-key-123',
  resend: 're_resend_api_key_123',
  safe: 'safe-api-key-123',
  aiGateway: 'ai-gateway-key-123',
} as const;

export type Provider = 'discord' | 'slack' | 'telegram' | 'sendgrid' | 'resend' | 'safe' | 'ai-gateway';

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

interface Answer {
  /** Drop the connection without answering, after reading the whole request (as a provider that took the message and then lost the socket). */
  reset?: true;
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

type Handler = (req: Received, res: http.ServerResponse) => void;

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

const bearer = (req: Received) => /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];

const handlers: Record<Provider, Handler> = {
  discord(req, res) {
    const m = /^\/api\/webhooks\/(\d+)\/([^/?]+)/.exec(req.path);
    if (!m) return json(res, 404, { message: '404: Not Found', code: 0 });
    if (m[1] !== CREDENTIALS.discord.id || m[2] !== CREDENTIALS.discord.token) return json(res, 401, { message: 'Invalid Webhook Token', code: 50027 });
    if (req.method === 'GET') return json(res, 200, { id: m[1], type: 1, name: 'Flowgate alerts', channel_id: '1180000000000000099', guild_id: '1' });
    if (typeof req.body?.content !== 'string' || req.body.content.length > 2000) {
      return json(res, 400, { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH' }] } } });
    }
    if (!req.path.includes('wait=true')) return void res.writeHead(204).end();
    return json(res, 200, { id: String(Date.now()), channel_id: '1180000000000000099', content: req.body.content });
  },
  slack(req, res) {
    if (req.path === CREDENTIALS.slackWebhookPath) {
      if (typeof req.body?.text !== 'string') return void res.writeHead(400, { 'content-type': 'text/plain' }).end('invalid_payload');
      return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    }
    if (req.path.startsWith('/services/')) return void res.writeHead(403, { 'content-type': 'text/plain' }).end('invalid_token');
    if (req.path === '/api/chat.postMessage' || req.path === '/api/auth.test') {
      const token = bearer(req);
      if (!token) return json(res, 200, { ok: false, error: 'not_authed' });
      if (token !== CREDENTIALS.slackBot) return json(res, 200, { ok: false, error: 'invalid_auth' });
      if (req.path === '/api/auth.test')
        return json(res, 200, { ok: true, url: 'https://example.slack.com/', team: 'Example', user: 'flowgate', team_id: 'T0001', user_id: 'U0001' });
      if (!req.body?.channel) return json(res, 200, { ok: false, error: 'channel_not_found' });
      return json(res, 200, { ok: true, channel: 'C0001', ts: '1700000000.000100', message: { text: req.body.text } });
    }
    return json(res, 404, { ok: false, error: 'unknown_method' });
  },
  telegram(req, res) {
    const m = /^\/bot([^/]+)\/(\w+)/.exec(req.path);
    if (!m) return json(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    if (m[1] !== CREDENTIALS.telegram) return json(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    if (m[2] === 'getMe') return json(res, 200, { ok: true, result: { id: 123456, is_bot: true, first_name: 'Flowgate', username: 'flowgate_bot' } });
    if (m[2] === 'sendMessage') {
      if (!req.body?.chat_id) return json(res, 400, { ok: false, error_code: 400, description: 'Bad Request: chat_id is empty' });
      if (String(req.body.text ?? '').length > 4096) return json(res, 400, { ok: false, error_code: 400, description: 'Bad Request: message is too long' });
      return json(res, 200, { ok: true, result: { message_id: 42, chat: { id: req.body.chat_id }, text: req.body.text } });
    }
    return json(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
  },
  sendgrid(req, res) {
    if (bearer(req) !== CREDENTIALS.sendgrid) {
      return json(res, 401, { errors: [{ field: null, message: 'The provided authorization grant is invalid, expired, or revoked', help: null }] });
    }
    if (req.method === 'GET' && req.path === '/v3/scopes') return json(res, 200, { scopes: ['mail.send', 'alerts.read'] });
    if (req.method === 'POST' && req.path === '/v3/mail/send') {
      if (!req.body?.personalizations?.[0]?.to?.length || !req.body?.from?.email) {
        return json(res, 400, { errors: [{ message: 'The personalizations field is required.', field: 'personalizations' }] });
      }
      return void res.writeHead(202, { 'x-message-id': `sg-${randomUUID().slice(0, 12)}` }).end();
    }
    return json(res, 404, { errors: [{ message: 'not found' }] });
  },
  resend(req, res) {
    const key = bearer(req);
    if (!key) return json(res, 401, { statusCode: 401, name: 'missing_api_key', message: 'Missing API key in the authorization header.' });
    if (key !== CREDENTIALS.resend) return json(res, 403, { statusCode: 403, name: 'invalid_api_key', message: 'API key is invalid' });
    if (req.method === 'GET' && req.path === '/domains')
      return json(res, 200, { object: 'list', data: [{ id: 'd1', name: 'example.com', status: 'verified' }] });
    if (req.method === 'POST' && req.path === '/emails') {
      const b = req.body ?? {};
      if (!b.from || !b.to || !b.subject)
        return json(res, 422, { statusCode: 422, name: 'validation_error', message: 'Missing `from`, `to` or `subject` field.' });
      return json(res, 200, { id: randomUUID() });
    }
    return json(res, 404, { statusCode: 404, name: 'not_found', message: 'The requested endpoint does not exist.' });
  },
  safe(req, res) {
    if (!/^\/tx-service\/\w+\/api\/v1\/about\/$/.test(req.path)) return json(res, 404, { detail: 'Not found.' });
    if (bearer(req) !== CREDENTIALS.safe) return json(res, 401, { detail: 'Invalid API key.' });
    return json(res, 200, { name: 'Safe Transaction Service', version: '5.21.0', api_version: 'v1', secure: true });
  },
  'ai-gateway'(req, res) {
    if (req.path !== '/v1/credits') return json(res, 404, { error: { message: 'Not found', type: 'not_found' } });
    if (bearer(req) !== CREDENTIALS.aiGateway) return json(res, 401, { error: { message: 'Invalid API key', type: 'authentication_error' } });
    return json(res, 200, { balance: '12.50', total_used: '0.75' });
  },
};

export interface ProviderServer {
  provider: Provider;
  /** Origin (http://127.0.0.1:port): the integration's apiBaseUrl. */
  url: string;
  received: Received[];
  /** Answers served (in order) before the normal handling; still recorded in `received`. */
  failNext(...answers: Answer[]): void;
  close(): Promise<void>;
}

async function startOne(provider: Provider): Promise<ProviderServer> {
  const received: Received[] = [];
  const queued: Answer[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        // kept as text
      }
      const entry: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      received.push(entry);
      const next = queued.shift();
      if (next?.reset) return void req.socket.destroy();
      if (next) return json(res, next.status ?? 500, next.body ?? {}, next.headers);
      handlers[provider](entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    provider,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    failNext: (...answers) => void queued.push(...answers),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The rate-limit answer each provider really gives, asking for a short wait. */
export const RATE_LIMITED: Record<Provider, Answer> = {
  discord: { status: 429, headers: { 'retry-after': '1' }, body: { message: 'You are being rate limited.', retry_after: 0.05, global: false } },
  slack: { status: 429, headers: { 'retry-after': '1' }, body: { ok: false, error: 'ratelimited' } },
  telegram: { status: 429, body: { ok: false, error_code: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } } },
  sendgrid: { status: 429, headers: { 'retry-after': '1' }, body: { errors: [{ field: null, message: 'too many requests' }] } },
  resend: { status: 429, headers: { 'retry-after': '1' }, body: { statusCode: 429, name: 'rate_limit_exceeded', message: 'Too many requests.' } },
  safe: { status: 429, headers: { 'retry-after': '1' }, body: { detail: 'Request was throttled.' } },
  'ai-gateway': { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'Rate limited', type: 'rate_limit' } } },
};

export type ProviderServers = Record<Provider, ProviderServer> & { close(): Promise<void> };

export async function startProviderServers(): Promise<ProviderServers> {
  const names: Provider[] = ['discord', 'slack', 'telegram', 'sendgrid', 'resend', 'safe', 'ai-gateway'];
  const servers = await Promise.all(names.map(startOne));
  const byName = Object.fromEntries(servers.map((s) => [s.provider, s])) as Record<Provider, ProviderServer>;
  return { ...byName, close: async () => void (await Promise.all(servers.map((s) => s.close()))) };
}

/** The Discord webhook URL a user would paste, and the Slack incoming-webhook URL, at their official hosts. */
export const discordWebhookUrl = (token: string = CREDENTIALS.discord.token) => `https://discord.com/api/webhooks/${CREDENTIALS.discord.id}/${token}`;
export const slackWebhookUrl = (path: string = CREDENTIALS.slackWebhookPath) => `https://hooks.slack.com${path}`;

/** A gateway's own mailer (sign-up, step-up codes, address links) sending through the local Resend server; outbound HTTP to it allowed. */
export const operatorMailerEnv = (fakes: ProviderServers): Record<string, string> => ({
  FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
  FLOWGATE_EMAIL_PROVIDER: 'resend',
  FLOWGATE_EMAIL_API_KEY: CREDENTIALS.resend,
  FLOWGATE_EMAIL_FROM: 'no-reply@flowgate.example',
  FLOWGATE_EMAIL_API_BASE_URL: fakes.resend.url,
});
