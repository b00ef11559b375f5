import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local HTTP server for workflow steps to call: JSON echo, a price feed, a cookie-setting header echo, one quoting a key encoded, one that answers after `?ms=`, and one that never answers. */
export async function startHttpTarget() {
  const hits: { method: string; url: string; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push({ method: req.method ?? '', url: req.url ?? '', body });
      if (req.url?.startsWith('/hang')) return; // never answers
      if (req.url?.startsWith('/slow')) {
        const ms = Number(new URL(req.url, 'http://x').searchParams.get('ms') ?? 1000);
        const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"slow":true}'), ms);
        res.on('close', () => clearTimeout(timer));
        return;
      }
      if (req.url?.startsWith('/prices')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ prices: [1.5, 2.25, 3], symbol: 'ETH' }));
        return;
      }
      if (req.url?.startsWith('/quote')) {
        // A debugging endpoint quoting the request's key transformed: percent-encoded, in base64, and the Basic credentials.
        const key = String(req.headers['x-api-key'] ?? '');
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            note: `received key ${encodeURIComponent(key)}`,
            bytes: Buffer.from(key).toString('base64'),
            basic: req.headers.authorization ?? null,
          }),
        );
        return;
      }
      if (req.url?.startsWith('/session')) {
        // A login-like endpoint: sets a session cookie and echoes the request's headers, as debugging endpoints do.
        res
          .writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'sid=cookie-secret-3; HttpOnly' })
          .end(JSON.stringify({ url: req.url, headers: req.headers, body }));
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ method: req.method, url: req.url, body: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    hits,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
