import cors from 'cors';
import type { RequestHandler } from 'express';
import type { OriginPolicy } from './origins.ts';

/**
 * CORS by route. Public documents and public operations answer any origin
 * (`*`): they take no credential. Routes that take one (every non-public
 * registry operation, the MCP endpoints) answer only trusted origins, echoed
 * back with `Vary: Origin`; a browser on any other origin gets no CORS
 * headers, so it can neither send the key nor read the answer.
 */

const EXPOSED_HEADERS = [
  'WWW-Authenticate',
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-Poll-Interval-Hint',
  'Deprecation',
  'Sunset',
  'Link',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'PAYMENT-REQUIRED',
  'PAYMENT-RESPONSE',
  'Payment-Receipt',
  'ETag',
];
const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Accept',
  'Idempotency-Key',
  'Service-Version',
  'Mcp-Protocol-Version',
  'Mcp-Session-Id',
  'Last-Event-ID',
  'PAYMENT-SIGNATURE',
  'If-None-Match',
  'X-Internal-Service-Token',
  // The CAPTCHA widget's answer on e-mail sign-up (src/auth/captcha.ts).
  'X-Captcha-Response',
];

/** True when the route a request (or, for a preflight, the request it announces) goes to takes a credential. */
export type CredentialRoute = (method: string, path: string) => boolean;

export function corsByRoute(takesCredential: CredentialRoute, origins: OriginPolicy): RequestHandler {
  const common = { methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], allowedHeaders: ALLOWED_HEADERS, exposedHeaders: EXPOSED_HEADERS, maxAge: 600 };
  const preflightOpen = cors({ origin: '*', ...common });
  const preflightTrusted = cors({ origin: (origin, done) => done(null, origin !== undefined && origins.allows(origin)), ...common });
  const exposed = EXPOSED_HEADERS.join(',');
  return (req, res, next) => {
    if (req.method === 'OPTIONS') {
      const announced = req.headers['access-control-request-method'];
      const method = typeof announced === 'string' ? announced.toUpperCase() : req.method;
      return (takesCredential(method, req.path) ? preflightTrusted : preflightOpen)(req, res, next);
    }
    // Any other request gets the headers the cors package would set on it (the origin allowed, the headers a script
    // may read), without the options objects and header lists that package builds per request.
    if (!takesCredential(req.method, req.path)) {
      res.setHeader('Access-Control-Allow-Origin', '*');
    } else {
      const origin = req.headers.origin;
      if (origin === undefined || !origins.allows(origin)) return next();
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.vary('Origin');
    }
    res.setHeader('Access-Control-Expose-Headers', exposed);
    next();
  };
}
