import type { Store } from '../store/db.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../ids.ts';

/**
 * The audit log: append-only rows of who did what to which organization,
 * from where. Details are small JSON objects of ids and names; a secret (a
 * key, a token, a signature, a code) never goes in.
 */

export const AUDIT_ACTIONS = [
  'sign_in',
  'sign_in_failed',
  'sign_out',
  'session_revoked',
  'sign_up',
  'key_created',
  'key_revoked',
  'role_changed',
  'member_removed',
  'invitation_created',
  'invitation_revoked',
  'invitation_accepted',
  'organization_switched',
  'step_up_succeeded',
  'step_up_failed',
  'totp_enrolled',
  'totp_removed',
  'wallet_exported',
  'wallet_withdrawal',
  'spend_cap_changed',
  'audit_log_exported',
  'email_link_requested',
  'email_changed',
  'sign_in_link_created',
  'oauth_grant_created',
  'oauth_grant_revoked',
  'oauth_token_revoked',
  // An integration's stored credentials created, changed or deleted (details.change, type, name, the fields named).
  'integration_changed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  organizationId: string | null;
  /** Who acted: a principal, the host operator's CLI (`kind: 'cli'`), or null for an anonymous attempt (a failed sign-in). */
  actor:
    | Pick<Principal, 'kind' | 'userId' | 'keyId'>
    | { kind: 'cli'; userId?: null; keyId?: null }
    // An OAuth client acting on its own grant (a revocation, a detected token reuse): keyId is the grant.
    | { kind: 'oauth_client'; userId: string; keyId: string }
    | null;
  action: AuditAction;
  target?: string | null;
  outcome?: 'success' | 'failure';
  ip?: string | null;
  details?: Record<string, string | number | boolean | null>;
}

let lastAuditAt = 0;

/**
 * Audit rows written by this process get strictly increasing times (at least a millisecond apart), so the
 * log's "newest first" follows the order they were written even within one millisecond (a step-up and the
 * export it let through, say); the row id, random, would otherwise decide.
 */
function auditTime(): string {
  lastAuditAt = Math.max(Date.now(), lastAuditAt + 1);
  return new Date(lastAuditAt).toISOString();
}

export async function recordAudit(store: Store, entry: AuditEntry): Promise<void> {
  await store
    .insertInto('audit_log')
    .values({
      id: newId(),
      organization_id: entry.organizationId,
      actor_user_id: entry.actor?.userId ?? null,
      actor_kind: entry.actor?.kind ?? 'anonymous',
      // A session id is a handle to a live credential's row, not the credential: it may be listed.
      actor_key_id: entry.actor?.keyId ?? null,
      action: entry.action,
      target: entry.target ?? null,
      outcome: entry.outcome ?? 'success',
      ip: entry.ip ?? null,
      details: entry.details ? JSON.stringify(entry.details) : null,
      created_at: auditTime(),
    })
    .execute();
}
