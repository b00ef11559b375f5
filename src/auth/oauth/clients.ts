import { OAuthClientMetadataSchema, type OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { InvalidClientError, InvalidClientMetadataError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Store } from '../../store/db.ts';
import { nowIso } from '../../ids.ts';
import { isoIn, tokenHash } from '../tokens.ts';
import { safeFetch } from '../../net/safe-fetch.ts';
import { isEgressError } from '../../net/egress-error.ts';
import type { EgressAllowList } from '../../net/egress-policy.ts';
import { redirectUriProblem } from './redirect-uris.ts';
import { TOKEN_ENDPOINT_AUTH_METHODS } from './metadata.ts';

/**
 * OAuth clients: registered dynamically (RFC 7591, open to anyone) or named
 * by an https URL of their metadata (a Client ID Metadata Document), which is
 * fetched through the egress policy and cached for METADATA_DOCUMENT_TTL_MS,
 * then fetched again. A registered client that never completes a flow
 * expires; expired rows of both kinds are deleted by the sweep of
 * src/store/expired-rows.ts (anyone can name new client_id URLs, and
 * /authorize, which fetches them, is limited per IP). A registered client's
 * secret, if it has one, is stored only as a SHA-256 (the token endpoint
 * compares digests: src/http/oauth/router.ts).
 */

/** A registered client with no grant after this long is forgotten. */
export const UNUSED_CLIENT_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a fetched metadata document is trusted before it is fetched again. */
export const METADATA_DOCUMENT_TTL_MS = 60 * 60 * 1000;
const METADATA_DOCUMENT_MAX_BYTES = 64 * 1024;
const METADATA_DOCUMENT_TIMEOUT_MS = 5_000;

export type ClientMetadata = Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'>;

const CLIENT_NAME_MAX = 100;

/**
 * Why a client_name cannot be shown on the consent page as the client's name, or undefined. The page escapes it, but
 * a name can still lie: bidi overrides reorder what the user reads, invisible (format) characters and runs of spaces
 * push the truth out of view, and a 90,000-character name is a wall of text.
 */
function clientNameProblem(name: string): string | undefined {
  const trimmed = name.trim();
  const length = [...trimmed].length;
  if (length > CLIENT_NAME_MAX) return `client_name must be at most ${CLIENT_NAME_MAX} characters (it has ${length})`;
  if (/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u.test(name)) {
    return 'client_name must not contain control, format (bidi overrides and isolates, zero-width characters) or unassigned characters';
  }
  if (/\s\s|[^\S ]/u.test(name)) return 'client_name may separate words only by single plain spaces (no tabs, no-break spaces or runs of spaces)';
  return undefined;
}

/** Refuses metadata this server will not honour: bad redirect URIs, the implicit flow, a client_name that misleads. */
function checkMetadata(metadata: ClientMetadata, fail: (message: string) => Error): void {
  const nameProblem = metadata.client_name === undefined ? undefined : clientNameProblem(metadata.client_name);
  if (nameProblem) throw fail(nameProblem);
  if (metadata.redirect_uris.length === 0) throw fail('redirect_uris must list at least one URI');
  for (const uri of metadata.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw fail(`invalid redirect_uri: ${problem}`);
  }
  if (metadata.grant_types?.some((g) => g === 'implicit' || g === 'password' || g === 'client_credentials')) {
    throw fail('only the authorization_code and refresh_token grants are supported (OAuth 2.1: no implicit or password grant)');
  }
  if (metadata.response_types?.some((t) => t !== 'code')) throw fail('only response_type "code" is supported (no implicit flow)');
  // What the server metadata advertises, and all the token endpoint can check: a client registered for another method
  // (client_secret_basic, private_key_jwt) was accepted and then failed at every token request.
  const method = metadata.token_endpoint_auth_method;
  if (method !== undefined && !TOKEN_ENDPOINT_AUTH_METHODS.includes(method)) {
    throw fail(`token_endpoint_auth_method ${JSON.stringify(method)} is not supported; use ${TOKEN_ENDPOINT_AUTH_METHODS.map((m) => `"${m}"`).join(' or ')}`);
  }
}

export const isMetadataDocumentClientId = (clientId: string) => clientId.startsWith('https://');

export async function registerClient(store: Store, info: ClientMetadata & { client_id?: string; client_id_issued_at?: number }) {
  checkMetadata(info, (message) => new InvalidClientMetadataError(message));
  // Registered clients that never completed a flow are forgotten as new ones register.
  await store.deleteFrom('oauth_clients').where('source', '=', 'registered').where('expires_at', '<', nowIso()).execute();
  const clientId = info.client_id!;
  const { client_secret: secret, ...rest } = info;
  await store
    .insertInto('oauth_clients')
    .values({
      client_id: clientId,
      secret_hash: secret ? tokenHash(secret) : null,
      metadata: JSON.stringify(rest),
      source: 'registered',
      created_at: nowIso(),
      expires_at: isoIn(UNUSED_CLIENT_TTL_MS),
    })
    .execute();
  return info as OAuthClientInformationFull;
}

/** The stored client; `client_secret` (when it has one) is the secret's digest. */
async function storedClient(store: Store, clientId: string): Promise<OAuthClientInformationFull | undefined> {
  const row = await store.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  if (!row) return undefined;
  if (row.expires_at !== null && row.expires_at <= nowIso()) {
    if (row.source === 'registered') await store.deleteFrom('oauth_clients').where('client_id', '=', clientId).execute();
    return undefined;
  }
  return { ...JSON.parse(row.metadata), client_id: row.client_id, ...(row.secret_hash ? { client_secret: row.secret_hash } : {}) };
}

/**
 * The client as stored, for /token and /revoke, which never fetch: a metadata-document client is known from its
 * /authorize, and its row serves past the cache's hour (a refresh a day later needs no fresh copy to identify a
 * public client; /authorize fetches again). A registered client that never completed a flow has expired.
 */
export async function knownClient(store: Store, clientId: string): Promise<OAuthClientInformationFull | undefined> {
  if (clientId.length > 2048) return undefined;
  const row = await store.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  if (!row || (row.source === 'registered' && row.expires_at !== null && row.expires_at <= nowIso())) return undefined;
  return { ...JSON.parse(row.metadata), client_id: row.client_id, ...(row.secret_hash ? { client_secret: row.secret_hash } : {}) };
}

/** Fetches and checks a Client ID Metadata Document; the refusal says why. */
async function fetchMetadataDocument(clientId: string, allowList: EgressAllowList): Promise<ClientMetadata> {
  const fail = (why: string) => new InvalidClientError(`client_id ${clientId}: ${why}`);
  // Anyone may send /authorize a client_id, so why a fetch failed (the address a name resolved to, a refusal, a TLS
  // error, a status) is not told: it would resolve and probe the hosts the operator allows for tenants' steps.
  const unfetched = () =>
    fail(
      `the metadata document could not be fetched: it must be served over https by a public host, answer 200 within ${METADATA_DOCUMENT_TIMEOUT_MS / 1000} s, and hold at most ${METADATA_DOCUMENT_MAX_BYTES / 1024} KiB`,
    );
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw fail('not a valid URL');
  }
  if (url.protocol !== 'https:' || url.hash || url.pathname === '/') throw fail('a metadata document client_id is an https URL with a path and no fragment');
  let body: Buffer;
  try {
    const response = await safeFetch(url, {
      headers: { accept: 'application/json' },
      allowList,
      timeoutMs: METADATA_DOCUMENT_TIMEOUT_MS,
      maxResponseBytes: METADATA_DOCUMENT_MAX_BYTES,
      maxRedirects: 0,
    });
    if (response.status !== 200) throw unfetched();
    body = response.body;
  } catch (error) {
    if (isEgressError(error)) throw unfetched();
    throw error;
  }
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
  } catch {
    throw fail('the metadata document is not JSON');
  }
  const parsed = OAuthClientMetadataSchema.safeParse(document);
  if (!parsed.success) throw fail(`the metadata document is not valid client metadata: ${parsed.error.message}`);
  if ((document as { client_id?: unknown }).client_id !== clientId) throw fail('the metadata document must name this URL as its client_id');
  if ((parsed.data.token_endpoint_auth_method ?? 'none') !== 'none')
    throw fail('metadata document clients are public clients (token_endpoint_auth_method "none")');
  checkMetadata(parsed.data, fail);
  return { ...parsed.data, token_endpoint_auth_method: 'none' };
}

export async function getClient(store: Store, clientId: string, allowList: EgressAllowList): Promise<OAuthClientInformationFull | undefined> {
  if (clientId.length > 2048) return undefined;
  const stored = await storedClient(store, clientId);
  if (stored || !isMetadataDocumentClientId(clientId)) return stored;
  const metadata = await fetchMetadataDocument(clientId, allowList);
  const row = {
    client_id: clientId,
    secret_hash: null,
    metadata: JSON.stringify(metadata),
    source: 'metadata_document' as const,
    created_at: nowIso(),
    expires_at: isoIn(METADATA_DOCUMENT_TTL_MS),
  };
  await store
    .insertInto('oauth_clients')
    .values(row)
    .onConflict((oc) => oc.column('client_id').doUpdateSet({ metadata: row.metadata, created_at: row.created_at, expires_at: row.expires_at }))
    .execute();
  return { ...metadata, client_id: clientId };
}

/** A registered client that completed a flow no longer expires. */
export async function keepClient(store: Store, clientId: string): Promise<void> {
  await store.updateTable('oauth_clients').set({ expires_at: null }).where('client_id', '=', clientId).where('source', '=', 'registered').execute();
}
