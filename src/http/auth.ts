import type { RequestHandler } from 'express';
import type { Principal } from '../../tools/define.ts';
import type { KeyService } from '../auth/keys.ts';
import { unauthorized } from '../../tools/authorize.ts';

/**
 * Optional bearer authentication: anonymous requests pass through (public
 * routes and the public MCP surface), a presented but unknown token is a 401
 * so a misconfigured client finds out at once.
 */

declare module 'express-serve-static-core' {
  interface Request {
    principal: Principal | null;
  }
}

export function bearerAuth(keys: KeyService, resourceMetadataUrl: string): RequestHandler {
  return async (req, _res, next) => {
    req.principal = null;
    const header = req.headers.authorization;
    if (!header) return next();
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) {
      return next(unauthorized(resourceMetadataUrl, 'Malformed Authorization header: expected "Authorization: Bearer svc_...".'));
    }
    try {
      req.principal = await keys.authenticate(match[1]!);
    } catch (error) {
      return next(error);
    }
    if (!req.principal) {
      return next(unauthorized(resourceMetadataUrl, 'Invalid or revoked API key. Organization keys start with svc_; create one with `flowgate keys create --name NAME`.'));
    }
    next();
  };
}
