import type { Store } from '../store/db.ts';
import type { SessionsTable } from '../store/schema.ts';
import type { Principal, Role } from './principal.ts';
import { newId, nowIso } from '../ids.ts';
import { isoIn, newToken, tokenHash } from './tokens.ts';

/**
 * Server-side browser sessions. The cookie holds a random token; the store
 * holds its SHA-256, the user, the active organization and the expiry. Every
 * request reads the row together with the user's membership of the active
 * organization, so a revoked session or a removed member is refused at once.
 */

export const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * last_seen_at is written at most this often per session. The row's own value decides, so no per-process
 * memory grows with the number of sessions and every instance (PostgreSQL) agrees.
 */
const SEEN_WRITE_INTERVAL_MS = 60_000;

export interface SessionRecord {
  id: string;
  userId: string;
  organizationId: string;
  ip: string | null;
  userAgent: string | null;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
}

export interface SessionService {
  create(input: { userId: string; organizationId: string; ip?: string; userAgent?: string }): Promise<{ token: string; session: SessionRecord }>;
  /** The principal for a cookie token, or null when the session is unknown, expired, revoked or its membership is gone. */
  authenticate(token: string): Promise<Principal | null>;
  get(sessionId: string): Promise<SessionRecord | undefined>;
  /** The user's live sessions, newest first. */
  list(userId: string): Promise<SessionRecord[]>;
  /** Ends a session of this user; false when there is no such live session. */
  revoke(userId: string, sessionId: string): Promise<boolean>;
  /** Makes another organization the session's active one (the caller checked the membership). */
  switchOrganization(sessionId: string, organizationId: string): Promise<void>;
}

type Row = Pick<SessionsTable, 'id' | 'user_id' | 'organization_id' | 'ip' | 'user_agent' | 'created_at' | 'last_seen_at' | 'expires_at'>;

const toRecord = (row: Row): SessionRecord => ({
  id: row.id,
  userId: row.user_id,
  organizationId: row.organization_id,
  ip: row.ip,
  userAgent: row.user_agent,
  createdAt: row.created_at,
  lastSeenAt: row.last_seen_at,
  expiresAt: row.expires_at,
});

const COLUMNS = ['id', 'user_id', 'organization_id', 'ip', 'user_agent', 'created_at', 'last_seen_at', 'expires_at'] as const;

export function createSessionService(store: Store): SessionService {
  const live = () => store.selectFrom('sessions').select(COLUMNS).where('revoked_at', 'is', null).where('expires_at', '>', nowIso());

  return {
    async create({ userId, organizationId, ip, userAgent }) {
      const token = newToken();
      const now = nowIso();
      const row = {
        id: newId(),
        token_hash: tokenHash(token),
        user_id: userId,
        organization_id: organizationId,
        ip: ip ?? null,
        user_agent: userAgent?.slice(0, 300) ?? null,
        created_at: now,
        last_seen_at: now,
        expires_at: isoIn(SESSION_TTL_MS),
        revoked_at: null,
      };
      await store.insertInto('sessions').values(row).execute();
      return { token, session: toRecord(row) };
    },

    async authenticate(token) {
      if (token.length < 20 || token.length > 100) return null;
      const row = await store
        .selectFrom('sessions')
        .innerJoin('memberships', (join) =>
          join.onRef('memberships.user_id', '=', 'sessions.user_id').onRef('memberships.organization_id', '=', 'sessions.organization_id'),
        )
        .select(['sessions.id', 'sessions.user_id', 'sessions.organization_id', 'sessions.last_seen_at', 'memberships.role'])
        .where('sessions.token_hash', '=', tokenHash(token))
        .where('sessions.revoked_at', 'is', null)
        .where('sessions.expires_at', '>', nowIso())
        .executeTakeFirst();
      if (!row) return null;
      const now = Date.now();
      if (Date.parse(row.last_seen_at) + SEEN_WRITE_INTERVAL_MS < now) {
        await store
          .updateTable('sessions')
          .set({ last_seen_at: new Date(now).toISOString() })
          .where('id', '=', row.id)
          .execute();
      }
      return { kind: 'session', organizationId: row.organization_id, userId: row.user_id, keyId: row.id, scope: null, role: row.role as Role };
    },

    async get(sessionId) {
      const row = await live().where('id', '=', sessionId).executeTakeFirst();
      return row && toRecord(row);
    },

    async list(userId) {
      return (await live().where('user_id', '=', userId).orderBy('created_at', 'desc').execute()).map(toRecord);
    },

    async revoke(userId, sessionId) {
      const result = await store
        .updateTable('sessions')
        .set({ revoked_at: nowIso() })
        .where('id', '=', sessionId)
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    async switchOrganization(sessionId, organizationId) {
      await store.updateTable('sessions').set({ organization_id: organizationId }).where('id', '=', sessionId).execute();
    },
  };
}
