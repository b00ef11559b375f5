import type { RequestHandler } from 'express';
import { ServiceError } from '../errors.ts';
import type { OriginPolicy } from './origins.ts';

/**
 * SPEC Authentication rule 6, for browsers: a state-changing request to
 * `/api/auth/*` must carry a trusted `Origin` (none, or `null`, is
 * MISSING_OR_NULL_ORIGIN); elsewhere a POST, PUT, PATCH or DELETE that a
 * session cookie authenticates must come from a trusted `Origin`, or
 * `Referer` when `Origin` is absent (`Invalid origin`). Bearer callers
 * without a cookie session need neither header. Runs after authentication.
 */

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const AUTH_ROUTES = /^\/api\/auth\//i;

/**
 * Whether the request is for a sign-in route, judged on the path as the router reads it: decoded, so `/api/%61uth/`
 * (which reaches the same operation) is not let past the rule, and with repeated slashes folded.
 */
function isAuthRoute(path: string): boolean {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // Malformed: the router answers 400 before any operation runs.
  }
  return AUTH_ROUTES.test(path) || AUTH_ROUTES.test(decoded.replace(/\/{2,}/g, '/'));
}

const invalidOrigin = (received: string | undefined) =>
  new ServiceError(403, 'invalid_origin', 'Invalid origin', {
    message: `This request changes state with a session cookie, so it must come from the gateway's own pages or an origin in FLOWGATE_ALLOWED_ORIGINS; got ${received === undefined ? 'no Origin or Referer header' : JSON.stringify(received)}.`,
  });

function refererOrigin(referer: string | undefined): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return referer;
  }
}

export function originRules(origins: OriginPolicy, baseUrl: string): RequestHandler {
  const own = new URL(baseUrl).origin;
  return (req, _res, next) => {
    if (!STATE_CHANGING.has(req.method)) return next();
    const origin = req.headers.origin;
    if (isAuthRoute(req.path)) {
      if (!origin || origin === 'null') {
        return next(
          new ServiceError(403, 'MISSING_OR_NULL_ORIGIN', 'Missing or null Origin', {
            message: `Sign-in routes need an Origin header naming the gateway (Origin: ${own}); browsers send it themselves.`,
          }),
        );
      }
      return next(origins.allows(origin) ? undefined : invalidOrigin(origin));
    }
    if (req.principal?.kind !== 'session') return next();
    const claimed = origin ?? refererOrigin(req.headers.referer);
    next(claimed !== undefined && origins.allows(claimed) ? undefined : invalidOrigin(claimed));
  };
}
