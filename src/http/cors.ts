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
  const open = cors({ origin: '*', ...common });
  const trusted = cors({ origin: (origin, done) => done(null, origin !== undefined && origins.allows(origin)), ...common });
  return (req, res, next) => {
    const announced = req.headers['access-control-request-method'];
    const method = req.method === 'OPTIONS' && typeof announced === 'string' ? announced.toUpperCase() : req.method;
    (takesCredential(method, req.path) ? trusted : open)(req, res, next);
  };
}
