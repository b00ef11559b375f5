import type { Store } from '../store/db.ts';
import { assertRoom } from '../org/quotas.ts';
import type { KeyScope, Principal } from './principal.ts';
import { newId, nowIso } from '../ids.ts';
import { matchSecret, mintSecret, secretDigest } from './secret-keys.ts';
import { RecentPrincipals } from './recent-principals.ts';
import { first, prepared } from '../store/prepared.ts';
import type { ApiKeysTable } from '../store/schema.ts';

/**
 * Organization API keys (`svc_`). Only the SHA-256 of a key is stored; the
 * key itself exists once, in the response (or CLI output) that created it.
 */

export const KEY_SCOPES = ['mcp:read', 'mcp:write', 'mcp:admin'] as const satisfies readonly KeyScope[];
const ORG_KEY_PREFIX = 'svc_';
const LAST_USED_WRITE_INTERVAL_MS = 60_000;
/**
 * How long an authenticated key is honoured without reading it again (see
 * RecentPrincipals): a key revoked through another gateway process works
 * there for at most this long; the revoking process forgets it at once.
 */
export const KEY_RECHECK_MS = 2_000;

/** A live key whose creator is still a member of its organization (removal revokes keys too; this holds whatever path removed the membership). */
const liveKeyByHash = prepared<{ hash: string }, ApiKeysTable>((db: Store, a) =>
  db
    .selectFrom('api_keys')
    .selectAll()
    .where('key_hash', '=', a.hash)
    .where('revoked_at', 'is', null)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('memberships')
          .select('memberships.user_id')
          .whereRef('memberships.user_id', '=', 'api_keys.user_id')
          .whereRef('memberships.organization_id', '=', 'api_keys.organization_id'),
      ),
    ),
);

export interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  scope: KeyScope | null;
  organizationId: string;
  userId: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface KeyService {
  /** `quota`: how many live keys the organization may hold (config.quotas.apiKeys); unset (the operator's CLI, first start): no bound. */
  create(input: {
    organizationId: string;
    userId: string;
    name: string;
    scope: KeyScope | null;
    quota?: number;
    /** Written in the key's own transaction (the audit row): a key never exists without it. */
    alongside?: (db: Store, record: ApiKeyRecord) => Promise<void>;
  }): Promise<{ record: ApiKeyRecord; key: string }>;
  /** The principal for a bearer token, or null when it is not a live organization key. */
  authenticate(bearer: string): Promise<Principal | null>;
  /** Live keys, oldest first; `includeRevoked` adds revoked ones (with `revokedAt`). */
  list(organizationId: string, options?: { includeRevoked?: boolean }): Promise<ApiKeyRecord[]>;
  /**
   * Revokes a key of this organization: the record (with `revokedAt`), or
   * null when the organization has no such key. Revoking twice keeps the first date.
   */
  revoke(organizationId: string, keyId: string, alongside?: (db: Store, record: ApiKeyRecord) => Promise<void>): Promise<ApiKeyRecord | null>;
  countForOrganization(organizationId: string): Promise<number>;
}

export const isKeyScope = (value: string): value is KeyScope => (KEY_SCOPES as readonly string[]).includes(value);

export function createKeyService(store: Store): KeyService {
  const lastUsedWrites = new Map<string, number>();
  const recent = new RecentPrincipals(KEY_RECHECK_MS);

  const toRecord = (row: {
    id: string;
    name: string;
    prefix: string;
    scope: string | null;
    organization_id: string;
    user_id: string;
    created_at: string;
    last_used_at: string | null;
    revoked_at: string | null;
  }): ApiKeyRecord => ({
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scope: row.scope !== null && isKeyScope(row.scope) ? row.scope : null,
    organizationId: row.organization_id,
    userId: row.user_id,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  });

  return {
    async create({ organizationId, userId, name, scope, quota, alongside }) {
      const { key, prefix, hash } = mintSecret(ORG_KEY_PREFIX);
      const row = {
        id: newId(),
        organization_id: organizationId,
        user_id: userId,
        name,
        prefix,
        key_hash: hash,
        scope,
        created_at: nowIso(),
        last_used_at: null,
        revoked_at: null,
      };
      await store.transaction().execute(async (trx) => {
        await assertRoom(trx, 'apiKeys', quota, organizationId);
        await trx.insertInto('api_keys').values(row).execute();
        await alongside?.(trx, toRecord(row));
      });
      return { record: toRecord(row), key };
    },

    async authenticate(bearer) {
      if (!bearer.startsWith(ORG_KEY_PREFIX)) return null;
      const digest = secretDigest(bearer);
      const known = recent.get(digest);
      if (known) return known;
      const row = await matchSecret(bearer, ORG_KEY_PREFIX, (hash) => first(liveKeyByHash, store, { hash }));
      if (!row) return null;

      const now = Date.now();
      if ((lastUsedWrites.get(row.id) ?? 0) + LAST_USED_WRITE_INTERVAL_MS < now) {
        lastUsedWrites.set(row.id, now);
        await store
          .updateTable('api_keys')
          .set({ last_used_at: new Date(now).toISOString() })
          .where('id', '=', row.id)
          .execute();
      }
      const record = toRecord(row);
      const principal: Principal = Object.freeze({
        kind: 'api_key',
        organizationId: record.organizationId,
        userId: record.userId,
        keyId: record.id,
        scope: record.scope,
      });
      recent.remember(digest, principal, now);
      return principal;
    },

    async list(organizationId, { includeRevoked = false } = {}) {
      let query = store.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId);
      if (!includeRevoked) query = query.where('revoked_at', 'is', null);
      const rows = await query.orderBy('created_at').orderBy('id').execute();
      return rows.map(toRecord);
    },

    async revoke(organizationId, keyId, alongside) {
      const row = await store.transaction().execute(async (trx) => {
        const revoked = await trx
          .updateTable('api_keys')
          .set({ revoked_at: nowIso() })
          .where('id', '=', keyId)
          .where('organization_id', '=', organizationId)
          .where('revoked_at', 'is', null)
          .executeTakeFirst();
        const found = await trx.selectFrom('api_keys').selectAll().where('id', '=', keyId).where('organization_id', '=', organizationId).executeTakeFirst();
        // Only the request that revoked it records so (a second revocation keeps the first date and adds nothing).
        if (found && Number(revoked.numUpdatedRows) === 1) await alongside?.(trx, toRecord(found));
        return found;
      });
      if (!row) return null;
      // The stored hash is the digest the cache is keyed by: this process stops honouring the key now.
      recent.forget(row.key_hash);
      lastUsedWrites.delete(row.id);
      return toRecord(row);
    },

    async countForOrganization(organizationId) {
      const { count } = await store
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('organization_id', '=', organizationId)
        .executeTakeFirstOrThrow();
      return Number(count);
    },
  };
}
