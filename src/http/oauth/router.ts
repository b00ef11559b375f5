import crypto from 'node:crypto';
import express, { Router, type RequestHandler, type Response } from 'express';
import { authorizationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { InvalidRequestError, TooManyRequestsError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Services } from '../../services.ts';
import type { RateLimitName } from '../../config.ts';
import { rateLimitHeaders } from '../../guards/rate-limit.ts';
import { tokenHash } from '../../auth/tokens.ts';
import { approve, takeConsentRequest } from '../../auth/oauth/grants.ts';
import { OAUTH_ENDPOINTS } from '../../auth/oauth/metadata.ts';
import type { OriginPolicy } from '../origins.ts';
import { onlyUnder } from '../path-gate.ts';
import { knownClient } from '../../auth/oauth/clients.ts';
import { isLoopbackRedirect } from '../../auth/oauth/redirect-uris.ts';
import { createOAuthProvider, DECISION_PATH, fieldOf, sessionOf } from './provider.ts';
import { errorPage, pageHeaders } from './consent-page.ts';

/**
 * The authorization server's endpoints, from the MCP SDK's handlers (they
 * parse requests, check PKCE and answer RFC 6749 errors) over our provider,
 * plus the consent page's form target. Mounted before the gateway's own
 * authentication: these endpoints authenticate clients (and, for consent,
 * the session cookie) themselves. The discovery documents are registry
 * operations (tools/discovery.ts).
 */

/** Our per-IP limits (shared across processes), answered as RFC 6749 errors. */
function limitPerIp(services: Services, name: RateLimitName): RequestHandler {
  return async (req, res, next) => {
    try {
      const decision = await services.rateLimiter.consume(name, req.ip ?? 'unknown');
      if (services.rateLimiter.enabled) res.set(rateLimitHeaders(decision));
      if (decision.allowed) return next();
      res.setHeader('Retry-After', String(decision.resetSeconds));
      res.status(429).json(new TooManyRequestsError(`Too many requests; retry after ${decision.resetSeconds} s.`).toResponseObject());
    } catch (error) {
      next(error);
    }
  };
}

/**
 * Client secrets are stored as SHA-256 (src/auth/oauth/clients.ts): the SDK's
 * client authentication compares the presented secret with the stored value,
 * so the presented one is replaced by its digest first.
 */
const hashPresentedSecret: RequestHandler = (req, _res, next) => {
  const body = req.body as Record<string, unknown> | undefined;
  if (body && typeof body.client_secret === 'string') body.client_secret = tokenHash(body.client_secret);
  next();
};

function redirectWith(res: Response, redirectUri: string, params: Record<string, string | undefined>) {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(302, url.href);
}

/**
 * RFC 6749 4.1.2.1: an error sent back to the client's redirect URI carries the request's `state`. The SDK's
 * handler reads `state` only once every parameter passed its schema, so a refused one (a `plain` PKCE method,
 * say) came back without it, and a client matching answers to its requests by `state` could not place it.
 * The redirect URI was already checked against the client's registration when these redirects are made.
 */
const keepStateOnErrorRedirects: RequestHandler = (req, res, next) => {
  // A POSTed form is parsed before this (the SDK's own parser then leaves the parsed body as it is).
  const state = fieldOf(req, 'state');
  if (typeof state === 'string' && state !== '') {
    const redirect = res.redirect.bind(res) as (status: number, url: string) => void;
    res.redirect = ((statusOrUrl: number | string, maybeUrl?: string) => {
      const [status, url] = typeof statusOrUrl === 'number' ? [statusOrUrl, maybeUrl!] : [302, statusOrUrl];
      const target = URL.canParse(url) ? new URL(url) : undefined;
      if (target && target.searchParams.has('error') && !target.searchParams.has('state')) {
        target.searchParams.set('state', state);
        return redirect(status, target.href);
      }
      return redirect(status, url);
    }) as Response['redirect'];
  }
  next();
};

/**
 * RFC 9700 §4.11.2: anyone may register a client (no credentials) whose redirect URI is a site of their own, and a
 * malformed /authorize link then sent the browser there with no user interaction, a redirector on the gateway's
 * trusted origin. An error goes back to an https redirect URI only for a client the signed-in user of this browser
 * has a live grant for; otherwise the user sees the error here. Loopback redirect URIs (a native client on the user's own machine) are
 * always answered, as before.
 */
function errorRedirectsOnlyToKnownClients(services: Services): RequestHandler {
  return (req, res, next) => {
    const clientId = fieldOf(req, 'client_id');
    const redirect = res.redirect.bind(res) as (status: number, url: string) => void;
    res.redirect = ((statusOrUrl: number | string, maybeUrl?: string) => {
      const [status, url] = typeof statusOrUrl === 'number' ? [statusOrUrl, maybeUrl!] : [302, statusOrUrl];
      const target = URL.canParse(url) ? new URL(url) : undefined;
      if (!target?.searchParams.has('error') || isLoopbackRedirect(url) || typeof clientId !== 'string') return redirect(status, url);
      // This browser's own user must hold a live grant of the client: anyone may sign up and grant their own client
      // once, so a grant by anyone proved nothing.
      sessionOf(services, req)
        .then((principal) =>
          principal
            ? services.store
                .selectFrom('oauth_grants')
                .select('id')
                .where('client_id', '=', clientId)
                .where('user_id', '=', principal.userId)
                .where('revoked_at', 'is', null)
                .limit(1)
                .executeTakeFirst()
            : undefined,
        )
        .then((granted) => {
          if (granted) return redirect(status, url);
          const nonce = crypto.randomBytes(16).toString('base64');
          const reason = target.searchParams.get('error_description') ?? target.searchParams.get('error')!;
          res
            .status(400)
            .set(pageHeaders(nonce))
            .send(errorPage(`${reason} (The application was not sent back: it has not been authorized here before.)`));
        }, next);
    }) as Response['redirect'];
    next();
  };
}

/** RFC 7636 §4.1: 43 to 128 unreserved characters. Checked before the SDK compares it with the code's challenge. */
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const checkCodeVerifier: RequestHandler = (req, res, next) => {
  const body = req.body as Record<string, unknown> | undefined;
  if (body?.grant_type === 'authorization_code' && typeof body.code_verifier === 'string' && !CODE_VERIFIER.test(body.code_verifier)) {
    res.setHeader('Cache-Control', 'no-store');
    res.status(400).json(new InvalidRequestError('code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636 §4.1).').toResponseObject());
    return;
  }
  next();
};

export function oauthRouter(services: Services, origins: OriginPolicy): RequestHandler {
  const provider = createOAuthProvider(services);
  // /token and /revoke know only clients already stored: fetching metadata documents there, under the per-minute
  // token budget and with failures never cached, let one address make the gateway send thousands of requests an
  // hour. A real client went through /authorize (which fetches, under its hourly budget) before it has a code.
  const storedOnly = { ...provider, clientsStore: { getClient: (clientId: string) => knownClient(services.store, clientId) } };
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  // The consent page's form: approve or deny a pending request of this session.
  router.post(DECISION_PATH, form, async (req, res, next) => {
    const fail = (status: number, message: string) => {
      const nonce = crypto.randomBytes(16).toString('base64');
      res.status(status).set(pageHeaders(nonce)).send(errorPage(message));
    };
    try {
      // A form post from another site must not approve anything (CSRF): browsers send Origin on form posts.
      const origin = req.headers.origin;
      if (!origin || !origins.allows(origin)) return fail(403, 'This decision must come from the consent page of this gateway.');
      const principal = await sessionOf(services, req);
      if (!principal) return fail(401, 'Your session ended; start the connection again from your application.');
      const { request, decision } = (req.body ?? {}) as Record<string, unknown>;
      if (typeof request !== 'string' || (decision !== 'approve' && decision !== 'deny')) return fail(400, 'Malformed decision.');
      const params = await takeConsentRequest(services.store, principal.keyId, request);
      if (!params) return fail(400, 'This authorization request is unknown, expired or already decided; start the connection again from your application.');
      // The page named one organization and its scope was computed from the role there; a switch in another tab since
      // would grant the client another organization than the one consented to.
      if (params.organizationId !== undefined && params.organizationId !== principal.organizationId) {
        return fail(400, 'Your active organization changed since this consent page was shown; start the connection again from your application.');
      }
      if (decision === 'deny') {
        return redirectWith(res, params.redirectUri, { error: 'access_denied', error_description: 'The user denied the request.', state: params.state });
      }
      const { code } = await approve(services.store, { principal, params, ip: req.ip ?? null });
      redirectWith(res, params.redirectUri, { code, state: params.state });
    } catch (error) {
      next(error);
    }
  });
  // Anonymous, and a client_id that is a URL makes the gateway fetch its metadata document: limited per IP.
  router.use(
    OAUTH_ENDPOINTS.authorize,
    limitPerIp(services, 'oauthAuthorizePerIp'),
    form,
    keepStateOnErrorRedirects,
    errorRedirectsOnlyToKnownClients(services),
    authorizationHandler({ provider, rateLimit: false }),
  );
  router.use(
    OAUTH_ENDPOINTS.token,
    limitPerIp(services, 'oauthTokenPerIp'),
    form,
    hashPresentedSecret,
    checkCodeVerifier,
    tokenHandler({ provider: storedOnly, rateLimit: false }),
  );
  router.use(
    OAUTH_ENDPOINTS.revoke,
    limitPerIp(services, 'oauthTokenPerIp'),
    form,
    hashPresentedSecret,
    revocationHandler({ provider: storedOnly, rateLimit: false }),
  );
  router.use(
    OAUTH_ENDPOINTS.register,
    (req, res, next) => (req.method === 'POST' ? limitPerIp(services, 'oauthRegisterPerIp')(req, res, next) : next()),
    clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: false, clientSecretExpirySeconds: 0 }),
  );

  // Every route is under an OAuth endpoint (DECISION_PATH under /authorize): other paths skip the router.
  return onlyUnder(Object.values(OAUTH_ENDPOINTS), router);
}
