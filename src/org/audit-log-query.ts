import { z } from 'zod';
import type { Store } from '../store/db.ts';
import { badRequest } from '../errors.ts';
import { AUDIT_ACTIONS, type AuditAction } from './audit-log.ts';

/**
 * Reading the audit log of one organization: newest first, filtered by
 * action and time, paged by an opaque cursor (keyset on time and id, so a
 * page never repeats or skips rows written while a reader pages).
 */

export const auditRowSchema = z.object({
  id: z.string(),
  action: z.enum(AUDIT_ACTIONS),
  actor: z.object({
    kind: z.string().describe('session, api_key or anonymous'),
    userId: z.string().nullable(),
    credentialId: z.string().nullable().describe('The API key id or session id that acted (never the credential itself)'),
  }),
  target: z.string().nullable(),
  outcome: z.enum(['success', 'failure']),
  ip: z.string().nullable(),
  details: z.record(z.string(), z.unknown()).nullable(),
  createdAt: z.string(),
});
export type AuditRow = z.output<typeof auditRowSchema>;

export interface AuditQuery {
  action?: AuditAction;
  /** ISO time: only rows at or after it. */
  since?: string;
  limit: number;
  cursor?: string;
}

const encodeCursor = (row: { created_at: string; id: string }) => Buffer.from(`${row.created_at}|${row.id}`).toString('base64url');

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !id || extra !== undefined || Number.isNaN(Date.parse(createdAt))) {
    throw badRequest('invalid_input', 'cursor is not a cursor this endpoint returned', { issues: [{ path: ['cursor'], message: 'unknown cursor' }] });
  }
  return { createdAt, id };
}

type Row = {
  id: string;
  action: string;
  actor_kind: string;
  actor_user_id: string | null;
  actor_key_id: string | null;
  target: string | null;
  outcome: 'success' | 'failure';
  ip: string | null;
  details: string | null;
  created_at: string;
};

const toAuditRow = (row: Row): AuditRow => ({
  id: row.id,
  action: row.action as AuditAction,
  actor: { kind: row.actor_kind, userId: row.actor_user_id, credentialId: row.actor_key_id },
  target: row.target,
  outcome: row.outcome,
  ip: row.ip,
  details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
  createdAt: row.created_at,
});

export async function queryAuditLog(store: Store, organizationId: string, query: AuditQuery): Promise<{ rows: AuditRow[]; nextCursor: string | null }> {
  let q = store
    .selectFrom('audit_log')
    .select(['id', 'action', 'actor_kind', 'actor_user_id', 'actor_key_id', 'target', 'outcome', 'ip', 'details', 'created_at'])
    .where('organization_id', '=', organizationId);
  if (query.action) q = q.where('action', '=', query.action);
  if (query.since) q = q.where('created_at', '>=', new Date(query.since).toISOString());
  if (query.cursor) {
    const after = decodeCursor(query.cursor);
    q = q.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]));
  }
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(query.limit + 1)
    .execute();
  const page = rows.slice(0, query.limit);
  return { rows: page.map(toAuditRow), nextCursor: rows.length > query.limit ? encodeCursor(page[page.length - 1]!) : null };
}

/** The most rows one export carries; narrow it with `since` (or `action`) for more. */
export const AUDIT_EXPORT_MAX_ROWS = 100_000;

/** The rows matching the filters, newest first (the export), read page by page up to AUDIT_EXPORT_MAX_ROWS. */
export async function exportAuditRows(
  store: Store,
  organizationId: string,
  filters: Pick<AuditQuery, 'action' | 'since'>,
): Promise<{ rows: AuditRow[]; truncated: boolean }> {
  const rows: AuditRow[] = [];
  let cursor: string | undefined;
  do {
    const page = await queryAuditLog(store, organizationId, { ...filters, limit: 1000, cursor });
    rows.push(...page.rows);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && rows.length < AUDIT_EXPORT_MAX_ROWS);
  return { rows: rows.slice(0, AUDIT_EXPORT_MAX_ROWS), truncated: cursor !== undefined };
}

export const AUDIT_CSV_COLUMNS = ['id', 'createdAt', 'action', 'outcome', 'actorKind', 'actorUserId', 'actorCredentialId', 'target', 'ip', 'details'] as const;

/**
 * One CSV field (RFC 4180 quoting). A field a spreadsheet would read as a
 * formula (= + - @ or a control character first) gets a leading apostrophe:
 * targets and details can carry text a hostile caller chose.
 */
function csvField(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function auditRowsToCsv(rows: readonly AuditRow[]): string {
  const lines = [AUDIT_CSV_COLUMNS.join(',')];
  for (const r of rows) {
    lines.push(
      [r.id, r.createdAt, r.action, r.outcome, r.actor.kind, r.actor.userId, r.actor.credentialId, r.target, r.ip, r.details && JSON.stringify(r.details)]
        .map(csvField)
        .join(','),
    );
  }
  return lines.join('\r\n') + '\r\n';
}

export const auditRowsToJsonLines = (rows: readonly AuditRow[]): string => rows.map((r) => JSON.stringify(r) + '\n').join('');
