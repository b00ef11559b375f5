import { sharedNow } from './clock.ts';
import { periodicSweep } from './periodic-sweep.ts';
import { sql } from 'kysely';
import type { Store } from './db.ts';
import type { Database } from './schema.ts';

/**
 * Rows that are of no use once they expire: sessions, one-time tokens and
 * challenges, OAuth codes, tokens and cached or unused clients, idempotency
 * records and rate-limit counters. Each was checked against its expiry when
 * read, but only some were ever deleted, so anonymous traffic (a nonce per
 * request, a counter per address, a client_id URL per /authorize) and every
 * key's idempotent requests added rows for good. They go a day after they
 * expire (so for a day an old link still reads as expired rather than
 * unknown), in batches of BATCH rows with the event loop free between them;
 * an instance sweeps at start (in the background) and hourly.
 * Audit rows go too once they are older than the deployment's audit
 * retention, and anonymous workflows nobody claimed once older than theirs.
 * Deletes are idempotent, so instances sharing a database may sweep at once.
 */

const DAY_MS = 24 * 60 * 60 * 1000;
const GRACE_MS = DAY_MS;
const SWEEP_MS = 60 * 60 * 1000;
const BATCH = 1_000;

interface Expiring {
  table: keyof Database;
  /** The primary key's columns (a batch is chosen by them). */
  key: string[];
  column: string;
  /** The column holds epoch milliseconds (rate-limiter-flexible's layout) rather than an ISO date. */
  epochMs?: boolean;
  /** Only rows no organization owns (anonymous workflows nobody claimed). */
  unowned?: boolean;
  /** Only OAuth clients without a live grant. */
  ungranted?: boolean;
}

export const EXPIRING_TABLES: readonly Expiring[] = [
  { table: 'sessions', key: ['id'], column: 'expires_at' },
  { table: 'siwe_nonces', key: ['nonce_hash'], column: 'expires_at' },
  { table: 'step_up_challenges', key: ['id'], column: 'expires_at' },
  { table: 'email_tokens', key: ['token_hash'], column: 'expires_at' },
  { table: 'sign_in_links', key: ['token_hash'], column: 'expires_at' },
  { table: 'oauth_requests', key: ['id_hash'], column: 'expires_at' },
  { table: 'oauth_codes', key: ['code_hash'], column: 'expires_at' },
  { table: 'oauth_tokens', key: ['token_hash'], column: 'expires_at' },
  // Cached metadata documents (anyone can name a new client_id URL at /authorize) and registered clients that never
  // completed a flow; a null expiry (a registered client with a grant) is kept, and so is a metadata document whose
  // client holds a live grant: /token and /revoke never fetch, so without the row its refresh tokens would stop working.
  { table: 'oauth_clients', key: ['client_id'], column: 'expires_at', ungranted: true },
  { table: 'idempotency_records', key: ['organization_id', 'endpoint', 'key'], column: 'expires_at' },
  // A null `expire` is a counter without a window (none is made so); it is kept.
  { table: 'rate_limits', key: ['key'], column: 'expire', epochMs: true },
  { table: 'rate_limit_hits', key: ['id'], column: 'expire', epochMs: true },
];

export interface ExpiryOptions {
  /** Days audit rows are kept (FLOWGATE_AUDIT_LOG_RETENTION_DAYS); undefined: forever. */
  auditLogRetentionDays?: number;
  /** Days an anonymous workflow nobody claimed is kept (FLOWGATE_ANONYMOUS_WORKFLOW_RETENTION_DAYS); undefined: forever. */
  anonymousWorkflowRetentionDays?: number;
}

/** Deletes every row that expired more than a day before `now`, and audit rows past their retention; returns how many went, per table. */
export async function deleteExpiredRows(
  store: Store,
  options: ExpiryOptions = {},
  now = Date.now(),
  keepGoing: () => boolean = () => true,
): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  const sweeps: (Omit<Expiring, 'epochMs'> & { cutoff: string | number })[] = EXPIRING_TABLES.map(({ epochMs, ...rows }) => ({
    ...rows,
    cutoff: epochMs ? now - GRACE_MS : new Date(now - GRACE_MS).toISOString(),
  }));
  const daysAgo = (days: number) => new Date(now - days * DAY_MS).toISOString();
  // Anonymous workflows can be made by anyone (per IP, up to a request body each): unclaimed, they go after their days.
  const { anonymousWorkflowRetentionDays: unclaimedDays, auditLogRetentionDays: auditDays } = options;
  if (unclaimedDays !== undefined) sweeps.push({ table: 'workflows', key: ['id'], column: 'created_at', cutoff: daysAgo(unclaimedDays), unowned: true });
  if (auditDays !== undefined) sweeps.push({ table: 'audit_log', key: ['id'], column: 'created_at', cutoff: daysAgo(auditDays) });
  for (const { table, key, column, cutoff, unowned, ungranted } of sweeps) {
    const keys = sql.join(key.map((k) => sql.ref(k)));
    const owned = unowned ? sql` and organization_id is null` : sql``;
    const granted = ungranted ? sql` and client_id not in (select client_id from oauth_grants where revoked_at is null)` : sql``;
    deleted[table] = 0;
    for (;;) {
      const result = await sql`delete from ${sql.table(table)} where (${keys}) in (
        select ${keys} from ${sql.table(table)} where ${sql.ref(column)} < ${cutoff}${owned}${granted} limit ${BATCH}
      )`.execute(store);
      const count = Number(result.numAffectedRows ?? 0);
      deleted[table] += count;
      if (count < BATCH || !keepGoing()) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (!keepGoing()) break;
  }
  return deleted;
}

/** Sweeps at once (in the background) and then hourly until closed; close() waits for a sweep under way. */
export function sweepExpiredRows(store: Store, options: ExpiryOptions = {}): { close(): Promise<void> } {
  return periodicSweep((isOpen) => deleteExpiredRows(store, options, sharedNow(), isOpen), SWEEP_MS, 'deleting expired rows failed');
}
