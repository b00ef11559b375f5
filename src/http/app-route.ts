import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

export function dashboardRouter(dist = DASHBOARD_DIST): RequestHandler {
  const router = Router();
  const indexFile = path.join(dist, 'index.html');
  router.use('/app', (_req, res, next) => {
    secure(res);
    next();
  });
  router.use(
    '/app/assets',
    express.static(path.join(dist, 'assets'), {
      index: false,
      // File names carry a content hash.
      setHeaders: (res) => res.setHeader('Cache-Control', 'public, max-age=31536000, immutable'),
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
