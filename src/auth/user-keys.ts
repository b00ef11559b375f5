import type { Store } from '../store/db.ts';
import { assertRoom } from '../org/quotas.ts';
import { newId, nowIso } from '../ids.ts';
import { notFound } from '../errors.ts';
import { matchSecret, mintSecret } from './secret-keys.ts';

/**
 * User webhook keys (`wfb_`, SPEC Authentication): they authenticate webhook
 * triggers only and are never organization keys (the bearer middleware
 * accepts `svc_` alone). Stored as SHA-256; the key is shown once.
 */

export const USER_KEY_PREFIX = 'wfb_';
export const USER_KEY_NAME_MAX = 100;
/** `last_used_at` is written at most this often per key, so a busy webhook does not write on every call. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export interface UserKeyRecord {
  id: string;
  name: string;
  prefix: string;
  userId: string;
  organizationId: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface UserKeyPrincipal {
  keyId: string;
  userId: string;
  organizationId: string;
}

const toRecord = (row: {
  id: string;
  name: string;
  prefix: string;
  user_id: string;
  organization_id: string;
  created_at: string;
  last_used_at: string | null;
}): UserKeyRecord => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  userId: row.user_id,
  organizationId: row.organization_id,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
});

/** Mints a key for `userId` in `organizationId`; the returned `key` is the only copy. */
export async function createUserKey(
  store: Store,
  input: {
    organizationId: string;
    userId: string;
    name: string;
    /** Live keys the organization may hold (config.quotas.webhookKeys); unset: no bound. */ quota?: number;
  },
  /** Written in the key's own transaction (the audit row). */
  alongside?: (db: Store, record: UserKeyRecord) => Promise<void>,
): Promise<{ record: UserKeyRecord; key: string }> {
  const { key, prefix, hash } = mintSecret(USER_KEY_PREFIX);
  const row = {
    id: newId(),
    user_id: input.userId,
    organization_id: input.organizationId,
    name: input.name,
    prefix,
    key_hash: hash,
    created_at: nowIso(),
    last_used_at: null,
    revoked_at: null,
  };
  await store.transaction().execute(async (trx) => {
    await assertRoom(trx, 'webhookKeys', input.quota, input.organizationId);
    await trx.insertInto('user_api_keys').values(row).execute();
    await alongside?.(trx, toRecord(row));
  });
  return { record: toRecord(row), key };
}

/** The organization's live keys, oldest first. */
export async function listUserKeys(store: Store, organizationId: string): Promise<UserKeyRecord[]> {
  const rows = await store
    .selectFrom('user_api_keys')
    .select(['id', 'name', 'prefix', 'user_id', 'organization_id', 'created_at', 'last_used_at'])
    .where('organization_id', '=', organizationId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toRecord);
}

/** Revokes a live key of the organization; a revoked, missing or foreign key is 404 alike. */
export async function revokeUserKey(store: Store, organizationId: string, keyId: string, alongside?: (db: Store) => Promise<void>): Promise<void> {
  await store.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('user_api_keys')
      .set({ revoked_at: nowIso() })
      .where('id', '=', keyId)
      .where('organization_id', '=', organizationId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) {
      throw notFound(`Webhook key ${JSON.stringify(keyId)} not found in this organization. GET /api/api-keys lists the live keys.`, { keyId });
    }
    await alongside?.(trx);
  });
}

/** Who a `wfb_` bearer belongs to, or null when it is not a live user key. */
export async function authenticateUserKey(store: Store, bearer: string): Promise<UserKeyPrincipal | null> {
  const row = await matchSecret(bearer, USER_KEY_PREFIX, (hash) =>
    store
      .selectFrom('user_api_keys')
      .select(['id', 'user_id', 'organization_id', 'key_hash'])
      .where('key_hash', '=', hash)
      .where('revoked_at', 'is', null)
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('memberships')
            .select('memberships.user_id')
            .whereRef('memberships.user_id', '=', 'user_api_keys.user_id')
            .whereRef('memberships.organization_id', '=', 'user_api_keys.organization_id'),
        ),
      )
      .executeTakeFirst(),
  );
  if (!row) return null;

  // Throttled in SQL rather than in memory, so this stays a plain function over the store.
  const now = new Date();
  const staleBefore = new Date(now.getTime() - LAST_USED_WRITE_INTERVAL_MS).toISOString();
  await store
    .updateTable('user_api_keys')
    .set({ last_used_at: now.toISOString() })
    .where('id', '=', row.id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
    .execute();
  return { keyId: row.id, userId: row.user_id, organizationId: row.organization_id };
}
