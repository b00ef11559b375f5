import type { NextFunction, Request, RequestHandler } from 'express';
import type { Principal } from '../auth/principal.ts';
import type { KeyService } from '../auth/keys.ts';
import type { SessionService } from '../auth/sessions.ts';
import { unauthorized } from '../../tools/authorize.ts';
import { authenticateUserKey, USER_KEY_PREFIX } from '../auth/user-keys.ts';
import { sessionTokenFrom } from '../auth/session-cookie.ts';
import type { Store } from '../store/db.ts';
import { ACCESS_TOKEN_PREFIX, verifyAccessToken } from '../auth/oauth/grants.ts';
import type { ResourceMap } from './oauth/resources.ts';

/** A `wfb_` key as a principal that only webhook-scoped operations accept (see tools/authorize.ts). */
async function userKeyPrincipal(store: Store, token: string): Promise<Principal | null> {
  const key = await authenticateUserKey(store, token);
  return key && { kind: 'user_key', organizationId: key.organizationId, userId: key.userId, keyId: key.keyId, scope: null };
}

/**
 * Optional authentication: anonymous requests pass through (public routes
 * and the public MCP surface). A bearer token wins over a session cookie; a
 * presented but unknown bearer is a 401 so a misconfigured client finds out
 * at once, while a stale session cookie is ignored (the browser simply is not
 * signed in any more).
 */

declare module 'express-serve-static-core' {
  interface Request {
    principal: Principal | null;
  }
}

/**
 * An OAuth access token's principal, refused (401 invalid_token) when it is
 * not live or is bound to another resource than the one asked for (RFC 8707).
 */
async function accessTokenPrincipal(store: Store, resources: ResourceMap, token: string, path: string): Promise<Principal> {
  const here = resources.of(path);
  const invalid = (message: string) => unauthorized(here.metadataUrl, message, 'invalid_token');
  const verified = await verifyAccessToken(store, token);
  if (!verified) throw invalid('Invalid, expired or revoked OAuth access token: refresh it, or authorize again.');
  if (!resources.accepts(verified.resource, path)) {
    throw invalid(`This access token was issued for resource ${verified.resource}; this endpoint is resource ${here.resource}. Authorize for this resource.`);
  }
  return verified.principal;
}

export function requestAuth(deps: { keys: KeyService; sessions: SessionService; store: Store; baseUrl: string; resources: ResourceMap }): RequestHandler {
  /** The principal of an `Authorization` header other than a payment; a refusal is thrown. */
  const bearerPrincipal = async (header: string, path: string): Promise<Principal> => {
    // Only a refusal names it: most requests never need it.
    const resourceMetadataUrl = () => deps.resources.of(path).metadataUrl;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthorized(resourceMetadataUrl(), 'Malformed Authorization header: expected "Authorization: Bearer svc_...".');
    const token = match[1]!;
    if (token.startsWith(ACCESS_TOKEN_PREFIX)) return accessTokenPrincipal(deps.store, deps.resources, token, path);
    const principal = token.startsWith(USER_KEY_PREFIX) ? await userKeyPrincipal(deps.store, token) : await deps.keys.authenticate(token);
    if (principal) return principal;
    throw unauthorized(
      resourceMetadataUrl(),
      'Invalid or revoked API key. Organization keys start with svc_; create one with `flowgate keys create --name NAME`.',
    );
  };

  /** Sets the principal a lookup found and goes on, or passes its refusal on. */
  const settle = (principal: Promise<Principal | null>, req: Request, next: NextFunction) =>
    void principal.then((found) => {
      req.principal = found;
      next();
    }, next);
  // Not async: an anonymous request without a cookie (most public traffic) passes without a promise.
  return (req, _res, next) => {
    req.principal = null;
    const header = req.headers.authorization;
    // `Authorization: Payment <credential>` is an MPP payment for a paid workflow call, not an identity.
    if (!header || /^Payment\s/i.test(header)) {
      const token = sessionTokenFrom(req.headers.cookie, deps.baseUrl);
      return token ? settle(deps.sessions.authenticate(token), req, next) : next();
    }
    settle(bearerPrincipal(header, req.path), req, next);
  };
}
