import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressError } from '../src/net/egress-error.ts';
import { EMPTY_ALLOW_LIST, isAddressAllowed, parseAllowHosts, refusedRange } from '../src/net/egress-policy.ts';
import { safeFetch } from '../src/net/safe-fetch.ts';

describe('egress policy', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local, cloud metadata'],
    ['169.254.1.1', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local, cloud metadata'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::a00:1', 'private'], // NAT64 of 10.0.0.1
    ['2002:7f00:1::', 'loopback'], // 6to4 of 127.0.0.1
    ['::7f00:1', 'reserved'], // deprecated IPv4-compatible ::127.0.0.1, as URLs normalize it
    ['2001:db8::1', 'reserved'],
  ])('refuses %s (%s)', (ip, range) => {
    expect(refusedRange(ip)).toBe(range);
    expect(isAddressAllowed(ip, ip, 443, EMPTY_ALLOW_LIST)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])('allows public %s', (ip) => {
    expect(refusedRange(ip)).toBeUndefined();
    expect(isAddressAllowed(ip, 'example.com', 443, EMPTY_ALLOW_LIST)).toBe(true);
  });

  it('accepts refused addresses listed by IP, CIDR or host name', () => {
    const list = parseAllowHosts(' 10.0.0.5 , 192.168.0.0/16, Internal.Example.COM., fd00::/8, [::1]');
    expect(isAddressAllowed('10.0.0.5', '10.0.0.5', 443, list)).toBe(true);
    expect(isAddressAllowed('10.0.0.6', '10.0.0.6', 443, list)).toBe(false);
    expect(isAddressAllowed('192.168.44.1', '192.168.44.1', 443, list)).toBe(true);
    expect(isAddressAllowed('::ffff:192.168.44.1', 'x', 443, list)).toBe(true); // mapped form of a listed range
    expect(isAddressAllowed('10.9.9.9', 'internal.example.com', 443, list)).toBe(true);
    expect(isAddressAllowed('10.9.9.9', 'other.example.com', 443, list)).toBe(false);
    expect(isAddressAllowed('fd12::1', 'fd12::1', 443, list)).toBe(true);
    expect(isAddressAllowed('::1', '[::1]', 443, list)).toBe(true);
    expect(isAddressAllowed('127.0.0.1', '127.0.0.1', 443, list)).toBe(false);
  });

  it('an entry with :port allows that port only; without one, every port', () => {
    const list = parseAllowHosts('db.internal:5432, db.internal:6432, 10.0.0.5:80, 10.1.0.0/16:443, [fd00::1]:8443, api.internal, 10.0.0.6');
    expect(isAddressAllowed('10.9.9.9', 'db.internal', 5432, list)).toBe(true);
    expect(isAddressAllowed('10.9.9.9', 'db.internal', 6432, list)).toBe(true);
    expect(isAddressAllowed('10.9.9.9', 'db.internal', 6379, list)).toBe(false);
    expect(isAddressAllowed('10.0.0.5', '10.0.0.5', 80, list)).toBe(true);
    expect(isAddressAllowed('10.0.0.5', '10.0.0.5', 22, list)).toBe(false);
    expect(isAddressAllowed('10.1.2.3', '10.1.2.3', 443, list)).toBe(true);
    expect(isAddressAllowed('10.1.2.3', '10.1.2.3', 80, list)).toBe(false);
    expect(isAddressAllowed('fd00::1', '[fd00::1]', 8443, list)).toBe(true);
    expect(isAddressAllowed('fd00::1', '[fd00::1]', 443, list)).toBe(false);
    expect(isAddressAllowed('10.9.9.9', 'api.internal', 6379, list)).toBe(true);
    expect(isAddressAllowed('10.0.0.6', '10.0.0.6', 6379, list)).toBe(true);
    // A name listed both with and without a port: every port.
    expect(isAddressAllowed('10.9.9.9', 'x.internal', 1, parseAllowHosts('x.internal:80,x.internal'))).toBe(true);
  });

  it('an empty or unset value allows nothing extra', () => {
    expect(parseAllowHosts(undefined).entries).toEqual([]);
    expect(parseAllowHosts(' , ').entries).toEqual([]);
  });

  it.each([
    'http://internal.example.com',
    'host:0',
    'host:65536',
    'host:80x',
    '[::1]:',
    'a:1:2x',
    '10.0.0.0/33',
    '10.1',
    '0x7f.1',
    '*.example.com',
    'a b',
    '::1/129',
    '10.0.0.0/x',
    'bad_-',
  ])('refuses the invalid entry %s, naming it', (entry) => {
    expect(() => parseAllowHosts(`localhost,${entry}`)).toThrow(JSON.stringify(entry));
  });
});

// ---- safeFetch against real local servers -------------------------------------

interface TestServer {
  port: number;
  hits: string[];
  close(): Promise<void>;
}

async function startServer(handler: http.RequestListener): Promise<TestServer> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readRequestBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function expectEgressError(promise: Promise<unknown>, kind: EgressError['kind']): Promise<EgressError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EgressError);
  expect((err as EgressError).kind).toBe(kind);
  return err as EgressError;
}

describe('safeFetch', () => {
  let server: TestServer;
  let base: string;
  const allowLoopback = parseAllowHosts('127.0.0.1');

  beforeAll(async () => {
    server = await startServer(async (req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const body = await readRequestBody(req);
      switch (url.pathname) {
        case '/echo':
          res.setHeader('content-type', 'application/json');
          res.setHeader('x-multi', ['a', 'b']);
          res.end(JSON.stringify({ method: req.method, headers: req.headers, body }));
          return;
        case '/redirect':
          res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to') ?? '/echo' });
          res.end('moving');
          return;
        case '/loop':
          res.writeHead(302, { location: '/loop' });
          res.end();
          return;
        case '/hang':
          return; // never answers
        case '/stall-body':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('partial'); // then never ends
          return;
        case '/big': {
          const size = Number(url.searchParams.get('size'));
          if (url.searchParams.get('chunked')) {
            res.writeHead(200, { 'content-type': 'text/plain' });
            for (let sent = 0; sent < size; sent += 256) res.write('x'.repeat(Math.min(256, size - sent)));
            res.end();
          } else {
            res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(size) });
            res.end('x'.repeat(size));
          }
          return;
        }
        case '/gzip': {
          const size = Number(url.searchParams.get('size'));
          res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
          res.end(zlib.gzipSync(Buffer.alloc(size, 'a')));
          return;
        }
        case '/secret':
          res.end('internal secret');
          return;
        default:
          res.writeHead(404, { 'content-type': 'text/plain' });
          res.end('no such path');
      }
    });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.close());

  it('refuses loopback by default, before sending anything', async () => {
    const before = server.hits.length;
    const err = await expectEgressError(safeFetch(`${base}/echo`), 'blocked');
    expect(err.message).toBe('Refused to connect to 127.0.0.1 (loopback): add the host to FLOWGATE_HTTP_ALLOW_HOSTS to allow it');
    expect(server.hits.length).toBe(before);
  });

  it('checks the resolved address of a host name (the address actually connected to)', async () => {
    const err = await expectEgressError(safeFetch(`http://localhost:${server.port}/echo`), 'blocked');
    // The kind of address a name resolved to, never the address: no DNS oracle for the gateway's internal names.
    expect(err.message).toMatch(/^Refused to connect to localhost \(resolves to a loopback address\)/);
    expect(JSON.stringify(err)).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it('refuses IPv4-mapped IPv6 literals', async () => {
    const err = await expectEgressError(safeFetch(`http://[::ffff:127.0.0.1]:${server.port}/echo`), 'blocked');
    expect(err.message).toContain('(loopback)');
  });

  it('refuses the cloud metadata address', async () => {
    const err = await expectEgressError(safeFetch('http://169.254.169.254/latest/meta-data/'), 'blocked');
    expect(err.message).toContain('169.254.169.254 (link-local, cloud metadata)');
  });

  it.each([
    ['IP', '127.0.0.1'],
    ['CIDR', '127.0.0.0/8'],
  ])('connects when the address is allow-listed by %s', async (_kind, entry) => {
    const res = await safeFetch(`${base}/echo`, { allowList: parseAllowHosts(entry) });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString()).method).toBe('GET');
  });

  it('an entry with a port allows that port only: another service of the same host is refused before anything is sent', async () => {
    const other = await startServer((_req, res) => res.end('other service'));
    try {
      const list = parseAllowHosts(`127.0.0.1:${server.port},localhost:${server.port}`);
      expect((await safeFetch(`${base}/echo`, { allowList: list })).status).toBe(200);
      expect((await safeFetch(`http://localhost:${server.port}/echo`, { allowList: list })).status).toBe(200);
      const err = await expectEgressError(safeFetch(`http://127.0.0.1:${other.port}/`, { allowList: list }), 'blocked');
      expect(err.message).toContain('127.0.0.1 (loopback)');
      await expectEgressError(safeFetch(`http://localhost:${other.port}/`, { allowList: list }), 'blocked');
      expect(other.hits).toEqual([]);
      // A redirect from the listed port to another port of the same host is judged again, and refused.
      await expectEgressError(safeFetch(`${base}/redirect?to=${encodeURIComponent(`http://127.0.0.1:${other.port}/`)}`, { allowList: list }), 'blocked');
      expect(other.hits).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('connects when the host name is allow-listed, but not to its address typed directly', async () => {
    const byName = parseAllowHosts('localhost');
    const res = await safeFetch(`http://localhost:${server.port}/echo`, { allowList: byName });
    expect(res.status).toBe(200);
    await expectEgressError(safeFetch(`${base}/echo`, { allowList: byName }), 'blocked');
  });

  it('round-trips method, headers and body; lower-cases response headers', async () => {
    const res = await safeFetch(`${base}/echo`, {
      method: 'put',
      headers: { 'X-Custom': 'yes', 'Content-Type': 'text/plain', Host: 'evil.example' },
      body: 'hello',
      allowList: allowLoopback,
    });
    const echoed = JSON.parse(res.body.toString());
    expect(echoed.method).toBe('PUT');
    expect(echoed.body).toBe('hello');
    expect(echoed.headers['x-custom']).toBe('yes');
    expect(echoed.headers['content-length']).toBe('5');
    expect(echoed.headers.host).toBe(`127.0.0.1:${server.port}`); // the Host header follows the URL
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['x-multi']).toBe('a, b');
    expect(res.url).toBe(`${base}/echo`);
  });

  it('sends URL credentials as basic auth and keeps them out of the returned URL', async () => {
    const res = await safeFetch(`http://user:p%40ss@127.0.0.1:${server.port}/echo?q=1`, { allowList: allowLoopback });
    expect(JSON.parse(res.body.toString()).headers.authorization).toBe(`Basic ${Buffer.from('user:p@ss').toString('base64')}`);
    expect(res.url).toBe(`${base}/echo?q=1`);
  });

  it('follows redirects, re-checking each hop', async () => {
    const res = await safeFetch(`${base}/redirect?to=/echo`, { allowList: allowLoopback });
    expect(res.status).toBe(200);
    expect(res.url).toBe(`${base}/echo`);
    expect(res.redirects).toBe(1);
  });

  it('blocks a redirect from an allowed host to a refused one at the hop', async () => {
    const hitsBefore = server.hits.filter((h) => h === '/secret').length;
    const to = encodeURIComponent(`${base}/secret`);
    const err = await expectEgressError(safeFetch(`http://localhost:${server.port}/redirect?to=${to}`, { allowList: parseAllowHosts('localhost') }), 'blocked');
    expect(err.message).toContain(`Refused to connect to 127.0.0.1 (loopback), reached by a redirect from http://localhost:${server.port}/redirect`);
    expect(server.hits.filter((h) => h === '/secret').length).toBe(hitsBefore);
  });

  it('turns 303 into GET without the body, keeps method and body on 307', async () => {
    const after303 = await safeFetch(`${base}/redirect?status=303`, {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'content-type': 'application/json' },
      allowList: allowLoopback,
    });
    const echoed303 = JSON.parse(after303.body.toString());
    expect(echoed303.method).toBe('GET');
    expect(echoed303.body).toBe('');
    expect(echoed303.headers['content-type']).toBeUndefined();

    const after307 = await safeFetch(`${base}/redirect?status=307`, { method: 'POST', body: '{"a":1}', allowList: allowLoopback });
    const echoed307 = JSON.parse(after307.body.toString());
    expect(echoed307.method).toBe('POST');
    expect(echoed307.body).toBe('{"a":1}');
  });

  it('drops credentials on a redirect to another origin', async () => {
    const to = encodeURIComponent(`http://localhost:${server.port}/echo`);
    const res = await safeFetch(`${base}/redirect?to=${to}`, {
      headers: { authorization: 'Bearer secret', 'x-keep': '1' },
      allowList: parseAllowHosts('127.0.0.1,localhost'),
    });
    const echoed = JSON.parse(res.body.toString());
    expect(echoed.headers.authorization).toBeUndefined();
    expect(echoed.headers['x-keep']).toBe('1');
  });

  const CREDENTIALS = {
    authorization: 'Bearer secret-a',
    cookie: 'sid=secret-b',
    'proxy-authorization': 'Basic secret-c',
    'x-api-key': 'secret-d',
    'x-custom-auth': 'secret-e',
    'x-session-id': 'secret-f',
    'x-client-secret': 'secret-g',
    'x-access-token': 'secret-h',
  };

  it('drops every credential header on a redirect to another port (another origin), keeping the others', async () => {
    const other = await startServer(async (req, res) => {
      await readRequestBody(req);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ headers: req.headers }));
    });
    try {
      const to = encodeURIComponent(`http://127.0.0.1:${other.port}/landing`);
      const res = await safeFetch(`${base}/redirect?to=${to}`, {
        headers: { ...CREDENTIALS, 'x-keep': '1', 'X-Token-Address': 'kept' },
        allowList: allowLoopback,
      });
      expect(other.hits).toEqual(['/landing']);
      const received = JSON.parse(res.body.toString()).headers;
      for (const name of Object.keys(CREDENTIALS)) expect(received[name], name).toBeUndefined();
      expect(JSON.stringify(received)).not.toContain('secret-');
      expect(received['x-keep']).toBe('1');
      expect(received['x-token-address']).toBe('kept');
    } finally {
      await other.close();
    }
  });

  it('keeps credential headers on a same-origin redirect', async () => {
    const res = await safeFetch(`${base}/redirect?to=/echo`, { headers: CREDENTIALS, allowList: allowLoopback });
    expect(res.redirects).toBe(1);
    expect(JSON.parse(res.body.toString()).headers).toMatchObject(CREDENTIALS);
  });

  it('stops after maxRedirects', async () => {
    const err = await expectEgressError(safeFetch(`${base}/loop`, { maxRedirects: 3, allowList: allowLoopback }), 'redirects');
    expect(err.message).toContain('stopped after 3');
  });

  it('times out on a server that never answers, within the limit', async () => {
    const started = Date.now();
    const err = await expectEgressError(safeFetch(`${base}/hang`, { timeoutMs: 300, allowList: allowLoopback }), 'timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(err.message).toBe(`Request to 127.0.0.1:${server.port} timed out after 300 ms`);
  });

  it('times out on a body that stalls after the headers', async () => {
    const started = Date.now();
    await expectEgressError(safeFetch(`${base}/stall-body`, { timeoutMs: 300, allowList: allowLoopback }), 'timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('reports the caller cancelling as aborted', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expectEgressError(safeFetch(`${base}/hang`, { signal: controller.signal, allowList: allowLoopback }), 'aborted');
  });

  it('caps the response body (declared length, chunked, and decompressed)', async () => {
    const declared = await expectEgressError(safeFetch(`${base}/big?size=2000`, { maxResponseBytes: 1000, allowList: allowLoopback }), 'too_large');
    expect(declared.message).toBe(`Response from 127.0.0.1:${server.port} is larger than the 1000 bytes limit`);
    await expectEgressError(safeFetch(`${base}/big?size=5000&chunked=1`, { maxResponseBytes: 1024, allowList: allowLoopback }), 'too_large');
    const bomb = await expectEgressError(safeFetch(`${base}/gzip?size=${1024 * 1024}`, { maxResponseBytes: 64 * 1024, allowList: allowLoopback }), 'too_large');
    expect(bomb.message).toContain('64 KB');
    const ok = await safeFetch(`${base}/big?size=1000`, { maxResponseBytes: 1000, allowList: allowLoopback });
    expect(ok.body.length).toBe(1000);
  });

  it('decodes gzip responses', async () => {
    const res = await safeFetch(`${base}/gzip?size=100`, { allowList: allowLoopback });
    expect(res.body.toString()).toBe('a'.repeat(100));
  });

  it('refuses non-http(s) and malformed URLs', async () => {
    expect((await expectEgressError(safeFetch('ftp://example.com/file'), 'invalid_url')).message).toContain('Only http and https');
    await expectEgressError(safeFetch('file:///etc/passwd'), 'invalid_url');
    await expectEgressError(safeFetch('not a url'), 'invalid_url');
  });

  it('reports a refused connection as a network error', async () => {
    const closed = await startServer(() => {});
    await closed.close();
    const err = await expectEgressError(safeFetch(`http://127.0.0.1:${closed.port}/`, { allowList: allowLoopback }), 'network');
    expect(err.message).toBe(`Connection to 127.0.0.1:${closed.port} was refused`);
  });

  it('refuses header values Node cannot send', async () => {
    await expectEgressError(safeFetch(`${base}/echo`, { headers: { 'x-bad': 'a\r\nb' }, allowList: allowLoopback }), 'invalid_request');
  });
});
