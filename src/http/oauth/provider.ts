import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { InvalidRequestError, InvalidTargetError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Services } from '../../services.ts';
import type { Principal } from '../../auth/principal.ts';
import { sessionTokenFrom } from '../../auth/session-cookie.ts';
import { getClient, registerClient } from '../../auth/oauth/clients.ts';
import {
  challengeForCode,
  createConsentRequest,
  exchangeCode,
  exchangeRefresh,
  revokeToken,
  scopeToGrant,
  verifyAccessToken,
} from '../../auth/oauth/grants.ts';
import { getListing } from '../../catalog/listings.ts';
import { isServiceError } from '../../errors.ts';
import { canonicalResource } from './resources.ts';
import { consentPage, pageHeaders, signInPage } from './consent-page.ts';

/**
 * The MCP SDK's OAuthServerProvider over our store: the SDK's handlers parse
 * the protocol and check PKCE; this adapter decides (who is signed in, which
 * resource and scope) and renders the consent page.
 */

export const DECISION_PATH = '/authorize/decision';

const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** A parameter of an authorization request: in the query of a GET, the form of a POST. */
export function fieldOf(req: Request, name: string): unknown {
  const source: unknown = req.method === 'POST' ? req.body : req.query;
  return source && typeof source === 'object' ? (source as Record<string, unknown>)[name] : undefined;
}

/** The session principal of a browser request, if it carries a live session cookie. */
export async function sessionOf(services: Services, req: Request): Promise<Principal | null> {
  const token = sessionTokenFrom(req.headers.cookie, services.config.baseUrl);
  return token ? services.sessions.authenticate(token) : null;
}

/** The resource an authorization is for: one of ours (the REST API, /mcp or a listed workflow's /mcp/w/<slug>); /mcp when the client names none. */
async function resourceToGrant(services: Services, requested: URL | undefined): Promise<string> {
  const base = services.config.baseUrl;
  if (!requested) return `${base}/mcp`;
  const href = canonicalResource(requested.href);
  if (href === canonicalResource(base)) return base;
  if (href === canonicalResource(`${base}/mcp`)) return `${base}/mcp`;
  if (href === canonicalResource(`${base}/.well-known/mcp`)) return `${base}/.well-known/mcp`;
  const prefix = canonicalResource(`${base}/mcp/w/`);
  if (href.startsWith(prefix) && !requested.search && !requested.hash) {
    const slug = href.slice(prefix.length);
    if (/^[a-z0-9][a-z0-9-]{0,99}$/.test(slug)) {
      try {
        await getListing(services.store, slug);
        return `${base}/mcp/w/${slug}`;
      } catch (error) {
        if (!isServiceError(error)) throw error;
      }
    }
  }
  throw new InvalidTargetError(
    `Unknown resource ${requested.href}: use ${base} (REST API), ${base}/mcp (or ${base}/.well-known/mcp) or ${base}/mcp/w/<slug> of a listed workflow.`,
  );
}

export function createOAuthProvider(services: Services): OAuthServerProvider {
  const { store, config } = services;
  return {
    clientsStore: {
      getClient: (clientId) => getClient(store, clientId, config.httpAllowHosts),
      registerClient: (client) => registerClient(store, client),
    },

    async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response) {
      const req = res.req;
      // An S256 challenge is 43 base64url characters; anything else makes a code no verifier can ever redeem.
      if (!PKCE_CHALLENGE.test(params.codeChallenge)) {
        throw new InvalidRequestError('code_challenge must be the base64url SHA-256 of the code_verifier (43 characters of A-Z a-z 0-9 - _).');
      }
      const resource = await resourceToGrant(services, params.resource);
      const clientName = client.client_name?.trim() || client.client_id;
      const nonce = crypto.randomBytes(16).toString('base64');
      const principal = await sessionOf(services, req);
      if (!principal) {
        res.status(200).set(pageHeaders(nonce)).send(signInPage({ clientName, nonce }));
        return;
      }
      const role = principal.role ?? 'member';
      const scope = scopeToGrant(params.scopes ?? [], role);
      const organization = await services.organizations.get(principal.organizationId);
      const requestHandle = await createConsentRequest(store, principal.keyId, {
        clientId: client.client_id,
        clientName: client.client_name?.trim() || null,
        redirectUri: params.redirectUri,
        redirectUriSent: typeof fieldOf(req, 'redirect_uri') === 'string',
        state: params.state,
        codeChallenge: params.codeChallenge,
        scope,
        resource,
        organizationId: principal.organizationId,
      });
      res
        .status(200)
        .set(pageHeaders(nonce))
        .send(
          consentPage({
            clientName,
            clientId: client.client_id,
            redirectHost: new URL(params.redirectUri).host,
            scope,
            organization: { name: organization?.name ?? principal.organizationId, slug: organization?.slug ?? '' },
            role,
            resource,
            requestHandle,
            decisionPath: DECISION_PATH,
          }),
        );
    },

    challengeForAuthorizationCode: (client, code) => challengeForCode(store, client.client_id, code),

    exchangeAuthorizationCode: (client, code, _verifier, redirectUri, resource) =>
      exchangeCode(store, { clientId: client.client_id, code, redirectUri, resource: resource && grantResourceOf(config.baseUrl, resource) }),

    exchangeRefreshToken: (client, refreshToken, scopes, resource) =>
      exchangeRefresh(store, { clientId: client.client_id, refreshToken, scopes, resource: resource && grantResourceOf(config.baseUrl, resource) }),

    async verifyAccessToken(token) {
      const verified = await verifyAccessToken(store, token);
      if (!verified) throw new InvalidTokenError('Invalid, expired or revoked access token');
      return {
        token,
        clientId: verified.clientId,
        scopes: verified.principal.scope ? [verified.principal.scope] : [],
        expiresAt: verified.expiresAt,
        resource: new URL(verified.resource),
      };
    },

    revokeToken: (client, request) => revokeToken(store, client.client_id, request.token),
  };
}

/** A resource parameter as grants store it (the base URL without its trailing slash), for comparison. */
function grantResourceOf(baseUrl: string, resource: URL): string {
  return canonicalResource(resource.href) === canonicalResource(baseUrl) ? baseUrl : resource.href;
}
