import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequestRunner } from '../src/engine/runners/http-request.ts';
import { sendWebhookRunner } from '../src/engine/runners/send-webhook.ts';
import { NodeError, type NodeRunContext } from '../src/engine/runners/types.ts';
import { EMPTY_ALLOW_LIST, parseAllowHosts, type EgressAllowList } from '../src/net/egress-policy.ts';
import { EgressSlots } from '../src/net/egress-slots.ts';
import type { Services } from '../src/services.ts';

function context(allowList: EgressAllowList, signal: AbortSignal = new AbortController().signal): NodeRunContext {
  return {
    executionId: 'exec_test',
    workflowId: 'wf_test',
    organizationId: 'org_test',
    node: { id: 'fetch', label: 'HTTP Request', actionType: 'HTTP Request' },
    signal,
    // Only the config's allow list and the caps on open requests are read by these runners.
    services: { config: { httpAllowHosts: allowList }, egressSlots: new EgressSlots(8, 16) } as unknown as Services,
    recordTransaction: async () => {},
  };
}

async function nodeError(promise: Promise<unknown>): Promise<NodeError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NodeError);
  return err as NodeError;
}

describe('HTTP runners against a local server', () => {
  let server: http.Server;
  let base: string;
  let host: string;
  const ctx = context(parseAllowHosts('127.0.0.1'));

  beforeAll(async () => {
    server = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://x');
      switch (url.pathname) {
        case '/echo':
          res.setHeader('content-type', 'application/json; charset=utf-8');
          res.setHeader('x-echo', 'yes');
          res.end(JSON.stringify({ method: req.method, headers: req.headers, body }));
          return;
        case '/text':
          res.setHeader('content-type', 'text/plain');
          res.end('plain words');
          return;
        case '/fail':
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end('{"reason":"exploded"}');
          return;
        case '/hang':
          return;
        case '/huge':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end(Buffer.alloc(5 * 1024 * 1024 + 1, 'x'));
          return;
        default:
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end('{"error":"not here"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    base = `http://${host}`;
  });
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );

  describe('HTTP Request', () => {
    it('GETs by default and returns status, parsed JSON data and headers', async () => {
      const out = await httpRequestRunner({ endpoint: `${base}/echo`, httpHeaders: '{"X-Api-Key":"k1","X-Count":3}' }, ctx);
      expect(out.success).toBe(true);
      expect(out.status).toBe(200);
      expect(out.headers).toMatchObject({ 'x-echo': 'yes', 'content-type': 'application/json; charset=utf-8' });
      const data = out.data as { method: string; headers: Record<string, string> };
      expect(data.method).toBe('GET');
      expect(data.headers['x-api-key']).toBe('k1');
      expect(data.headers['x-count']).toBe('3');
    });

    it('sends a JSON body as application/json, case-insensitive method', async () => {
      const out = await httpRequestRunner({ endpoint: `${base}/echo`, httpMethod: 'post', httpBody: '{"amount":"1.5"}' }, ctx);
      const data = out.data as { method: string; headers: Record<string, string>; body: string };
      expect(data.method).toBe('POST');
      expect(data.headers['content-type']).toBe('application/json');
      expect(data.body).toBe('{"amount":"1.5"}');
    });

    it('sends a text body as-is and keeps a given content-type', async () => {
      const plain = await httpRequestRunner({ endpoint: `${base}/echo`, httpMethod: 'PUT', httpBody: 'hello there' }, ctx);
      expect((plain.data as { headers: Record<string, string> }).headers['content-type']).toBe('text/plain; charset=utf-8');
      expect((plain.data as { body: string }).body).toBe('hello there');

      const given = await httpRequestRunner(
        { endpoint: `${base}/echo`, httpMethod: 'PATCH', httpHeaders: { 'Content-Type': 'application/x-www-form-urlencoded' }, httpBody: 'a=1&b=2' },
        ctx,
      );
      expect((given.data as { headers: Record<string, string> }).headers['content-type']).toBe('application/x-www-form-urlencoded');
    });

    it('returns a text response as a string; HEAD has an empty body', async () => {
      expect((await httpRequestRunner({ endpoint: `${base}/text` }, ctx)).data).toBe('plain words');
      const head = await httpRequestRunner({ endpoint: `${base}/text`, httpMethod: 'HEAD' }, ctx);
      expect(head).toMatchObject({ success: true, status: 200, data: '' });
    });

    it('answers a 404 with success:false, the status and the body', async () => {
      const out = await httpRequestRunner({ endpoint: `${base}/missing`, httpMethod: 'GET' }, ctx);
      expect(out).toMatchObject({ success: false, status: 404, error: `HTTP 404 Not Found from ${host}`, data: { error: 'not here' } });
      expect(out.headers).toMatchObject({ 'content-type': 'application/json' });
    });

    it('refuses loopback without an allow-list entry', async () => {
      const err = await nodeError(httpRequestRunner({ endpoint: `${base}/echo` }, context(EMPTY_ALLOW_LIST)));
      expect(err.message).toBe('Refused to connect to 127.0.0.1 (loopback): add the host to FLOWGATE_HTTP_ALLOW_HOSTS to allow it');
      expect(err.details.kind).toBe('blocked');
    });

    it('times out a target that hangs, within the node timeout', async () => {
      const started = Date.now();
      const err = await nodeError(httpRequestRunner({ endpoint: `${base}/hang`, timeout: 200 }, ctx));
      expect(err.message).toBe(`Request to ${host} timed out after 200 ms`);
      expect(Date.now() - started).toBeLessThan(2_000);
    });

    it('stops when the run is cancelled', async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const err = await nodeError(httpRequestRunner({ endpoint: `${base}/hang` }, context(parseAllowHosts('127.0.0.1'), controller.signal)));
      expect(err.details.kind).toBe('aborted');
    });

    it('caps responses at 5 MB', async () => {
      const err = await nodeError(httpRequestRunner({ endpoint: `${base}/huge` }, ctx));
      expect(err.message).toBe(`Response from ${host} is larger than the 5 MB limit`);
    });

    it('explains bad config', async () => {
      expect((await nodeError(httpRequestRunner({}, ctx))).message).toMatch(/^endpoint is required/);
      expect((await nodeError(httpRequestRunner({ endpoint: `${base}/echo`, httpMethod: 'FETCH' }, ctx))).message).toBe(
        'httpMethod "FETCH" is not supported: use one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS',
      );
      expect((await nodeError(httpRequestRunner({ endpoint: `${base}/echo`, httpHeaders: '{not json' }, ctx))).message).toMatch(
        /^httpHeaders is not valid JSON/,
      );
      // The parser's message would quote the header text around the error: a credential.
      const quoted = await nodeError(httpRequestRunner({ endpoint: `${base}/echo`, httpHeaders: '{"Authorization": Bearer quoted-secret-5}' }, ctx));
      expect(quoted.message).toMatch(/^httpHeaders is not valid JSON/);
      expect(quoted.message).not.toMatch(/quoted|secret|Bearer [^.]/);
      expect((await nodeError(httpRequestRunner({ endpoint: `${base}/echo`, httpHeaders: '["a"]' }, ctx))).message).toMatch(
        /^httpHeaders must be a JSON object/,
      );
      expect((await nodeError(httpRequestRunner({ endpoint: 'ftp://example.com/x' }, ctx))).details.kind).toBe('invalid_url');
    });
  });

  describe('webhook/send-webhook', () => {
    it('POSTs an object payload as JSON by default', async () => {
      const out = await sendWebhookRunner(
        { webhookUrl: `${base}/echo`, webhookPayload: { event: 'done', value: 2 }, webhookHeaders: '{"X-Signature":"abc"}' },
        ctx,
      );
      expect(out.success).toBe(true);
      expect(out.status).toBe(200);
      const data = out.data as { method: string; headers: Record<string, string>; body: string };
      expect(data.method).toBe('POST');
      expect(data.headers['content-type']).toBe('application/json');
      expect(data.headers['x-signature']).toBe('abc');
      expect(JSON.parse(data.body)).toEqual({ event: 'done', value: 2 });
    });

    it('sends a string payload as-is with the chosen method', async () => {
      const out = await sendWebhookRunner({ webhookUrl: `${base}/echo`, webhookMethod: 'put', webhookPayload: '{"ok":true}' }, ctx);
      expect((out.data as { method: string; body: string }).method).toBe('PUT');
      expect((out.data as { body: string }).body).toBe('{"ok":true}');
    });

    it('reports a 500 as success:false with status and data', async () => {
      const out = await sendWebhookRunner({ webhookUrl: `${base}/fail`, webhookPayload: '{}' }, ctx);
      expect(out).toEqual({ success: false, error: `HTTP 500 Internal Server Error from ${host}`, status: 500, data: { reason: 'exploded' } });
    });

    it('applies the same egress policy', async () => {
      const err = await nodeError(sendWebhookRunner({ webhookUrl: `${base}/echo`, webhookPayload: '{}' }, context(EMPTY_ALLOW_LIST)));
      expect(err.details.kind).toBe('blocked');
    });
  });
});
