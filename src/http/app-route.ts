import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import express, { Router, type RequestHandler, type Response } from 'express';
import { onlyUnder } from './path-gate.ts';

/**
 * The dashboard at /app: the committed Vite build in web/dist (built from
 * web/src by `npm run build:web`), so `npm install && npm start` needs no
 * build step. Every other path under /app is a client-side route and gets
 * index.html. A strict Content-Security-Policy: the page loads and talks only
 * to this gateway.
 */

export const DASHBOARD_DIST = fileURLToPath(new URL('../../web/dist', import.meta.url));

export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function secure(res: Response) {
  res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // The sign-in link's token is in the fragment, which is never sent; no-referrer keeps even the path to ourselves.
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
}

const COMPRESSIBLE = /^[\w-][\w.-]*\.(js|css|svg|json|map|txt)$/;

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/**
 * The build's text assets (about 116 KB of scripts and styles) brotli- or gzip-encoded for a browser that
 * asks: each compressed once, on its first request, on libuv's thread pool (brotli's best setting takes
 * tens of milliseconds a file), and kept. Only the files the build holds are considered (listed once), so
 * a request for any other name costs nothing and is never cached.
 */
function compressedAssets(dir: string): RequestHandler {
  let files: Set<string> | undefined;
  const cache = new Map<string, Promise<{ br: Buffer; gzip: Buffer }>>();
  const compressed = (name: string) => {
    let entry = cache.get(name);
    if (!entry) {
      entry = fs.promises
        .readFile(path.join(dir, name))
        .then(async (raw) => ({ br: await brotli(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }), gzip: await gzip(raw, { level: 9 }) }));
      cache.set(name, entry);
      entry.catch(() => cache.delete(name));
    }
    return entry;
  };
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const name = req.path.slice(1);
    files ??= new Set(fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => COMPRESSIBLE.test(f)) : []);
    if (!files.has(name)) return next();
    // brotli when the browser takes it (smaller), whatever order it lists them in.
    const encoding = req.acceptsEncodings('br') === 'br' ? 'br' : req.acceptsEncodings('gzip') === 'gzip' ? 'gzip' : undefined;
    if (!encoding) return next();
    compressed(name).then(
      (entry) => {
        const body = entry[encoding];
        // The name carries the content hash; the tag adds the encoding.
        const etag = `"${name}.${encoding}"`;
        res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
        res.setHeader('Vary', 'Accept-Encoding');
        res.setHeader('ETag', etag);
        res.type(path.extname(name));
        if (req.headers['if-none-match'] === etag) return void res.status(304).end();
        res.setHeader('Content-Encoding', encoding);
        res.setHeader('Content-Length', body.length);
        res.status(200).end(req.method === 'HEAD' ? undefined : body);
      },
      // Unreadable or not compressible after all: the plain file, from express.static below.
      () => next(),
    );
  };
}

export function dashboardRouter(dist = DASHBOARD_DIST): RequestHandler {
  const router = Router();
  const indexFile = path.join(dist, 'index.html');
  router.use('/app', (_req, res, next) => {
    secure(res);
    next();
  });
  router.use('/app/assets', compressedAssets(path.join(dist, 'assets')));
  router.use(
    '/app/assets',
    express.static(path.join(dist, 'assets'), {
      index: false,
      // File names carry a content hash.
      setHeaders: (res, file) => {
        res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
        // Another browser asking for the same name may get it encoded (above).
        if (COMPRESSIBLE.test(path.basename(file))) res.setHeader('Vary', 'Accept-Encoding');
      },
    }),
  );
  // A missing asset is a plain 404, never index.html under a script's name.
  router.use('/app/assets', (_req, res) => void res.status(404).type('text/plain; charset=utf-8').send('Not found'));
  router.get(['/app', '/app/{*rest}'], (_req, res) => {
    if (!fs.existsSync(indexFile)) {
      res.status(503).type('text/plain; charset=utf-8').send('The dashboard has not been built: run `npm run build:web`.');
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(indexFile);
  });
  // Everything here is under /app: other paths skip the router.
  return onlyUnder(['/app'], router);
}
