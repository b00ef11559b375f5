import { InvalidGrantError, InvalidRequestError, InvalidScopeError, InvalidTargetError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Store } from '../../store/db.ts';
import type { OAuthGrantsTable } from '../../store/schema.ts';
import type { KeyScope, Principal, Role } from '../principal.ts';
import { newId, nowIso } from '../../ids.ts';
import { isoIn, newToken, tokenHash } from '../tokens.ts';
import { recordAudit } from '../../org/audit-log.ts';
import { roleOf } from '../../org/roles.ts';
import { keepClient } from './clients.ts';
import { highestScope, isOAuthScope, lowerScope, maxScopeFor, scopeWithin } from './scopes.ts';

/**
 * Grants, authorization codes and tokens. A grant is one user's consent for
 * one client to act for one organization on one resource with one scope;
 * codes and tokens belong to it, and revoking it ends them all at once.
 * Codes and tokens are random and stored as SHA-256 only. Refresh tokens
 * rotate on every use; presenting a used one again is taken as theft and
 * revokes the grant (OAuth 2.1 §4.3.1).
 */

export const ACCESS_TOKEN_TTL_MS = 60 * 60 * 1000;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
export const CODE_TTL_MS = 5 * 60 * 1000;
export const CONSENT_REQUEST_TTL_MS = 10 * 60 * 1000;

export const ACCESS_TOKEN_PREFIX = 'fgat_';
const REFRESH_TOKEN_PREFIX = 'fgrt_';
const CODE_PREFIX = 'fgac_';

export interface ConnectedClient {
  id: string;
  clientId: string;
  clientName: string | null;
  userId: string;
  scope: KeyScope;
  resource: string;
  redirectUri: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const toConnected = (row: OAuthGrantsTable): ConnectedClient => ({
  id: row.id,
  clientId: row.client_id,
  clientName: row.client_name,
  userId: row.user_id,
  scope: row.scope as KeyScope,
  resource: row.resource,
  redirectUri: row.redirect_uri,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

/** The parameters of an authorization request, validated by the SDK's /authorize handler and by us. */
export interface ConsentParams {
  clientId: string;
  clientName: string | null;
  redirectUri: string;
  /** The request named redirectUri itself (rather than leaving the client's only one implied): /token must repeat it. */
  redirectUriSent?: boolean;
  state?: string;
  codeChallenge: string;
  scope: KeyScope;
  resource: string;
  /** The organization the consent page named (the session's active one then): a grant is only ever for it. */
  organizationId?: string;
}

/**
 * The scope to grant: the highest requested one the user's role allows (a
 * client asking for every scope gets what the role permits), else, when none
 * is requested, the most the role allows. Asking only for scopes above the
 * role is refused.
 */
export function scopeToGrant(requested: readonly string[], role: Role): KeyScope {
  const ceiling = maxScopeFor(role);
  const wanted = requested.filter((s) => s !== '');
  if (wanted.length === 0) return ceiling;
  const unknown = wanted.filter((s) => !isOAuthScope(s));
  if (unknown.length > 0) throw new InvalidScopeError(`Unknown scope ${unknown.join(' ')}; the scopes are mcp:read, mcp:write and mcp:admin.`);
  const allowed = (wanted as KeyScope[]).filter((s) => scopeWithin(s, ceiling));
  if (allowed.length === 0) {
    throw new InvalidScopeError(`Scope ${wanted.join(' ')} is above what your role (${role}) may grant; the most it allows is ${ceiling}.`);
  }
  return allowed.reduce((a, b) => (scopeWithin(a, b) ? b : a));
}

/** A consent page's pending request: a random handle bound to the session that saw the page. */
export async function createConsentRequest(store: Store, sessionId: string, params: ConsentParams): Promise<string> {
  // Decided or expired requests are of no use to anyone: drop them as new ones are made.
  await store.deleteFrom('oauth_requests').where('expires_at', '<', nowIso()).execute();
  const handle = newToken();
  await store
    .insertInto('oauth_requests')
    .values({
      id_hash: tokenHash(handle),
      session_id: sessionId,
      client_id: params.clientId,
      params: JSON.stringify(params),
      expires_at: isoIn(CONSENT_REQUEST_TTL_MS),
      used_at: null,
    })
    .execute();
  return handle;
}

/** Takes (once) the pending request of this session; undefined when unknown, expired, used or another session's. */
export async function takeConsentRequest(store: Store, sessionId: string, handle: string): Promise<ConsentParams | undefined> {
  if (handle.length > 100) return undefined;
  const idHash = tokenHash(handle);
  const result = await store
    .updateTable('oauth_requests')
    .set({ used_at: nowIso() })
    .where('id_hash', '=', idHash)
    .where('session_id', '=', sessionId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIso())
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return undefined;
  const row = await store.selectFrom('oauth_requests').select('params').where('id_hash', '=', idHash).executeTakeFirstOrThrow();
  return JSON.parse(row.params) as ConsentParams;
}

/** The user approved: a grant and its authorization code (returned once). Audited. */
export async function approve(
  store: Store,
  input: { principal: Principal; params: ConsentParams; ip: string | null },
): Promise<{ code: string; grant: ConnectedClient }> {
  const { principal, params } = input;
  const grant: OAuthGrantsTable = {
    id: newId(),
    client_id: params.clientId,
    client_name: params.clientName,
    user_id: principal.userId,
    organization_id: principal.organizationId,
    scope: params.scope,
    resource: params.resource,
    redirect_uri: params.redirectUri,
    created_at: nowIso(),
    last_used_at: null,
    revoked_at: null,
    revoked_reason: null,
  };
  const code = CODE_PREFIX + newToken();
  await store.transaction().execute(async (tx) => {
    await tx.insertInto('oauth_grants').values(grant).execute();
    await tx
      .insertInto('oauth_codes')
      .values({
        code_hash: tokenHash(code),
        grant_id: grant.id,
        code_challenge: params.codeChallenge,
        expires_at: isoIn(CODE_TTL_MS),
        used_at: null,
        redirect_uri: params.redirectUriSent ? params.redirectUri : null,
      })
      .execute();
  });
  await keepClient(store, params.clientId);
  await recordAudit(store, {
    organizationId: principal.organizationId,
    actor: principal,
    action: 'oauth_grant_created',
    target: grant.id,
    ip: input.ip,
    details: { clientId: params.clientId.slice(0, 200), clientName: params.clientName?.slice(0, 100) ?? null, scope: params.scope, resource: params.resource },
  });
  return { code, grant: toConnected(grant) };
}

/** Revokes a grant and so every code and token of it; false when it was already revoked or does not exist. Audited. */
export async function revokeGrant(
  store: Store,
  grantId: string,
  reason: 'user' | 'client' | 'refresh_token_reuse' | 'code_reuse' | 'member_removed',
  audit: { actor: Parameters<typeof recordAudit>[1]['actor']; ip?: string | null },
): Promise<boolean> {
  const result = await store
    .updateTable('oauth_grants')
    .set({ revoked_at: nowIso(), revoked_reason: reason })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  const grant = await store.selectFrom('oauth_grants').selectAll().where('id', '=', grantId).executeTakeFirstOrThrow();
  await recordAudit(store, {
    organizationId: grant.organization_id,
    actor: audit.actor,
    action: 'oauth_grant_revoked',
    target: grant.id,
    ip: audit.ip ?? null,
    details: { clientId: grant.client_id.slice(0, 200), reason },
  });
  return true;
}

const CLIENT_ACTOR = (grant: OAuthGrantsTable) => ({ kind: 'oauth_client' as const, userId: grant.user_id, keyId: grant.id });

async function liveGrant(store: Store, grantId: string, clientId: string): Promise<OAuthGrantsTable> {
  const grant = await store.selectFrom('oauth_grants').selectAll().where('id', '=', grantId).executeTakeFirst();
  if (!grant || grant.client_id !== clientId) throw new InvalidGrantError('This grant belongs to another client.');
  if (grant.revoked_at) throw new InvalidGrantError('This grant was revoked; authorize again.');
  return grant;
}

/**
 * An access token and its refresh token. The access token carries `scope` (a refresh may ask for less than the
 * grant); the refresh token always keeps the grant's, so a later refresh may ask for up to the grant again
 * (RFC 6749 §6: what the resource owner granted, not what the last refresh asked for).
 */
async function issueTokens(store: Store, grant: OAuthGrantsTable, scope: KeyScope = grant.scope as KeyScope): Promise<OAuthTokens> {
  const access = ACCESS_TOKEN_PREFIX + newToken();
  const refresh = REFRESH_TOKEN_PREFIX + newToken();
  const now = nowIso();
  await store
    .insertInto('oauth_tokens')
    .values([
      {
        token_hash: tokenHash(access),
        grant_id: grant.id,
        kind: 'access',
        created_at: now,
        expires_at: isoIn(ACCESS_TOKEN_TTL_MS),
        used_at: null,
        revoked_at: null,
        scope: scope === grant.scope ? null : scope,
      },
      {
        token_hash: tokenHash(refresh),
        grant_id: grant.id,
        kind: 'refresh',
        created_at: now,
        expires_at: isoIn(REFRESH_TOKEN_TTL_MS),
        used_at: null,
        revoked_at: null,
        scope: null,
      },
    ])
    .execute();
  return { access_token: access, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_MS / 1000, refresh_token: refresh, scope };
}

/** The PKCE challenge of a live code. A code presented after its use revokes its grant (RFC 6749 §4.1.2). */
export async function challengeForCode(store: Store, clientId: string, code: string): Promise<string> {
  const row = code.length <= 100 ? await store.selectFrom('oauth_codes').selectAll().where('code_hash', '=', tokenHash(code)).executeTakeFirst() : undefined;
  if (!row) throw new InvalidGrantError('Unknown authorization code.');
  const grant = await liveGrant(store, row.grant_id, clientId);
  if (row.used_at) {
    await revokeGrant(store, grant.id, 'code_reuse', { actor: CLIENT_ACTOR(grant) });
    throw new InvalidGrantError('This authorization code was already used; the grant it started is revoked.');
  }
  if (row.expires_at <= nowIso()) throw new InvalidGrantError('This authorization code has expired; authorize again.');
  return row.code_challenge;
}

/** Spends a code (the SDK checked PKCE against challengeForCode) for the grant's first tokens. */
export async function exchangeCode(store: Store, input: { clientId: string; code: string; redirectUri?: string; resource?: string }): Promise<OAuthTokens> {
  const codeHash = tokenHash(input.code);
  const row = await store.selectFrom('oauth_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
  if (!row) throw new InvalidGrantError('Unknown authorization code.');
  const grant = await liveGrant(store, row.grant_id, input.clientId);
  // RFC 6749 §4.1.3: required, and identical, when the authorization request carried one.
  if (row.redirect_uri && input.redirectUri === undefined) {
    throw new InvalidRequestError(`redirect_uri is required: send the one of the authorization request (${row.redirect_uri}).`);
  }
  if (input.redirectUri !== undefined && input.redirectUri !== (row.redirect_uri ?? grant.redirect_uri)) {
    throw new InvalidGrantError('redirect_uri differs from the one of the authorization request.');
  }
  if (input.resource !== undefined && input.resource !== grant.resource) {
    throw new InvalidTargetError(`This code was issued for resource ${grant.resource}, not ${input.resource}.`);
  }
  const spent = await store
    .updateTable('oauth_codes')
    .set({ used_at: nowIso() })
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIso())
    .executeTakeFirst();
  if (Number(spent.numUpdatedRows) === 0) {
    // Concurrent exchanges of one code: every one passed challengeForCode before any spent it. Losing a live code's
    // race is a replay like any other, and ends what the winner got.
    if (row.expires_at > nowIso()) {
      await revokeGrant(store, grant.id, 'code_reuse', { actor: CLIENT_ACTOR(grant) });
      throw new InvalidGrantError('This authorization code was already used; the grant it started is revoked.');
    }
    throw new InvalidGrantError('This authorization code has expired; authorize again.');
  }
  return issueTokens(store, grant);
}

/** Rotates a refresh token. A used one presented again revokes the whole grant. */
export async function exchangeRefresh(
  store: Store,
  input: { clientId: string; refreshToken: string; scopes?: string[]; resource?: string },
): Promise<OAuthTokens> {
  const hash = tokenHash(input.refreshToken);
  const row =
    input.refreshToken.length <= 100
      ? await store.selectFrom('oauth_tokens').selectAll().where('token_hash', '=', hash).where('kind', '=', 'refresh').executeTakeFirst()
      : undefined;
  if (!row) throw new InvalidGrantError('Unknown refresh token.');
  const grant = await liveGrant(store, row.grant_id, input.clientId);
  if (row.used_at) {
    await revokeGrant(store, grant.id, 'refresh_token_reuse', { actor: CLIENT_ACTOR(grant) });
    throw new InvalidGrantError('This refresh token was already used; as a precaution the whole grant is revoked. Authorize again.');
  }
  if (row.revoked_at || row.expires_at <= nowIso()) throw new InvalidGrantError('This refresh token has expired or was revoked; authorize again.');
  // A grant outlives nothing its user lost: without a membership in its organization it ends here (a removal revokes
  // it too; this covers a membership gone any other way).
  if (!(await roleOf(store, grant.organization_id, grant.user_id))) {
    await revokeGrant(store, grant.id, 'member_removed', { actor: CLIENT_ACTOR(grant) });
    throw new InvalidGrantError('The user who authorized this client is no longer a member of its organization; the grant is revoked.');
  }
  if (input.resource !== undefined && input.resource !== grant.resource) {
    throw new InvalidTargetError(`This grant is for resource ${grant.resource}, not ${input.resource}.`);
  }
  const requested = (input.scopes ?? []).filter((s) => s !== '');
  for (const scope of requested) {
    if (!isOAuthScope(scope) || !scopeWithin(scope, grant.scope as KeyScope))
      throw new InvalidScopeError(`Scope ${scope} is not within this grant (${grant.scope}).`);
  }
  // One scope per token, as per grant: the highest asked for; none asked means the grant's (RFC 6749 §6).
  const scope = highestScope(requested as KeyScope[]) ?? (grant.scope as KeyScope);
  const rotated = await store
    .updateTable('oauth_tokens')
    .set({ used_at: nowIso() })
    .where('token_hash', '=', hash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  if (Number(rotated.numUpdatedRows) === 0) {
    // Two presentations raced: the loser is the reuse.
    await revokeGrant(store, grant.id, 'refresh_token_reuse', { actor: CLIENT_ACTOR(grant) });
    throw new InvalidGrantError('This refresh token was already used; the grant is revoked.');
  }
  return issueTokens(store, grant, scope);
}

/** RFC 7009 for this client's token: an access token ends alone, a refresh token ends its grant. Unknown tokens are ignored. */
export async function revokeToken(store: Store, clientId: string, token: string): Promise<void> {
  if (token.length > 100) return;
  const row = await store.selectFrom('oauth_tokens').selectAll().where('token_hash', '=', tokenHash(token)).executeTakeFirst();
  if (!row) return;
  const grant = await store.selectFrom('oauth_grants').selectAll().where('id', '=', row.grant_id).executeTakeFirst();
  if (!grant || grant.client_id !== clientId) return;
  if (row.kind === 'access') {
    const result = await store
      .updateTable('oauth_tokens')
      .set({ revoked_at: nowIso() })
      .where('token_hash', '=', row.token_hash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) {
      await recordAudit(store, {
        organizationId: grant.organization_id,
        actor: CLIENT_ACTOR(grant),
        action: 'oauth_token_revoked',
        target: grant.id,
        details: { clientId: grant.client_id.slice(0, 200), kind: 'access' },
      });
    }
    return;
  }
  await revokeGrant(store, grant.id, 'client', { actor: CLIENT_ACTOR(grant) });
}

/** grant.last_used_at is written at most this often. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export interface VerifiedAccessToken {
  principal: Principal;
  /** The resource the token is bound to (RFC 8707), as a URL href. */
  resource: string;
  clientId: string;
  expiresAt: number;
}

/**
 * A live access token's principal, or null. Read from the store on every
 * request, so a revocation anywhere ends it at once; the scope is bounded by
 * the user's current role, and a user no longer a member is refused.
 */
export async function verifyAccessToken(store: Store, token: string): Promise<VerifiedAccessToken | null> {
  if (!token.startsWith(ACCESS_TOKEN_PREFIX) || token.length > 100) return null;
  const now = nowIso();
  const row = await store
    .selectFrom('oauth_tokens')
    .innerJoin('oauth_grants', 'oauth_grants.id', 'oauth_tokens.grant_id')
    .innerJoin('memberships', (join) =>
      join.onRef('memberships.user_id', '=', 'oauth_grants.user_id').onRef('memberships.organization_id', '=', 'oauth_grants.organization_id'),
    )
    .select([
      'oauth_grants.id as grant_id',
      'oauth_grants.client_id',
      'oauth_grants.user_id',
      'oauth_grants.organization_id',
      'oauth_grants.scope',
      'oauth_tokens.scope as token_scope',
      'oauth_grants.resource',
      'oauth_grants.last_used_at',
      'oauth_tokens.expires_at',
      'memberships.role',
    ])
    .where('oauth_tokens.token_hash', '=', tokenHash(token))
    .where('oauth_tokens.kind', '=', 'access')
    .where('oauth_tokens.revoked_at', 'is', null)
    .where('oauth_tokens.expires_at', '>', now)
    .where('oauth_grants.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  if (!row.last_used_at || Date.parse(row.last_used_at) + LAST_USED_WRITE_INTERVAL_MS < Date.now()) {
    await store.updateTable('oauth_grants').set({ last_used_at: now }).where('id', '=', row.grant_id).execute();
  }
  const role = row.role as Role;
  return {
    principal: {
      kind: 'oauth_token',
      organizationId: row.organization_id,
      userId: row.user_id,
      keyId: row.grant_id,
      scope: lowerScope((row.token_scope ?? row.scope) as KeyScope, maxScopeFor(role)),
      role,
    },
    resource: row.resource,
    clientId: row.client_id,
    expiresAt: Math.floor(Date.parse(row.expires_at) / 1000),
  };
}

/** An organization's grants (all, or one user's), newest first; `includeRevoked` adds ended ones. */
export async function listGrants(
  store: Store,
  organizationId: string,
  options: { userId?: string; includeRevoked?: boolean } = {},
): Promise<ConnectedClient[]> {
  let query = store.selectFrom('oauth_grants').selectAll().where('organization_id', '=', organizationId);
  if (options.userId) query = query.where('user_id', '=', options.userId);
  if (!options.includeRevoked) query = query.where('revoked_at', 'is', null);
  return (await query.orderBy('created_at', 'desc').orderBy('id').execute()).map(toConnected);
}

/** Grants that issued no usable token yet still show; revoking is by grant id within the organization. */
export async function findGrant(store: Store, organizationId: string, grantId: string): Promise<ConnectedClient | undefined> {
  const row = await store.selectFrom('oauth_grants').selectAll().where('id', '=', grantId).where('organization_id', '=', organizationId).executeTakeFirst();
  return row && toConnected(row);
}
