import { ServiceError } from '../errors.ts';
import { sharedNow } from '../store/clock.ts';
import { requestHash } from '../text/request-hash.ts';
import type { ExpressionBuilder } from 'kysely';
import type { Store } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { nowIso } from '../ids.ts';

/**
 * SPEC "Idempotency record": per organization and endpoint, a key is
 * in progress, settled (replays its response for 24 h), held (an outcome we
 * could not confirm: replays too) or released (deleted: the key runs again).
 * The body hash normalizes formatting (key order, whitespace, number
 * spelling: JSON parsing already did that) but never values.
 */

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface IdempotencyScope {
  organizationId: string;
  endpoint: string;
  key: string;
}

export interface StoredResponse {
  status: number;
  body: unknown;
}

export interface OwnedReservation {
  /** Notes the execution the key is running, so a later retry can recover it if this process dies. */
  attach(executionId: string): Promise<void>;
  settle(state: 'settled' | 'held', executionId: string | null, response: StoredResponse): Promise<void>;
  release(): Promise<void>;
}

export type Reservation =
  | ({ kind: 'fresh' } & OwnedReservation)
  /** In progress for longer than any live request can take: its process died; this caller now owns the recovery. */
  | ({ kind: 'stale'; executionId: string | null } & OwnedReservation)
  | { kind: 'replay'; response: StoredResponse };

export const MAX_KEY_LENGTH = 255;

/** Adds `idempotentReplay: true` to JSON-object bodies only (SPEC rule 1); the stored body stays untouched. */
export function replayBody(body: unknown): unknown {
  return body && typeof body === 'object' && !Array.isArray(body) ? { ...(body as object), idempotentReplay: true } : body;
}

/**
 * The one rule for an idempotency key, whichever path it arrives on (REST
 * `Idempotency-Key` header, MCP `idempotency_key` argument): surrounding
 * whitespace is trimmed; what remains must be 1 to 255 characters.
 */
export function parseIdempotencyKey(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string')
    throw new ServiceError(400, 'invalid_idempotency_key', `The idempotency key must be a string (got ${typeof raw}).`, { field: 'idempotency_key' });
  const key = raw.trim();
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new ServiceError(400, 'invalid_idempotency_key', `The idempotency key must be 1-${MAX_KEY_LENGTH} characters after trimming (got ${key.length}).`, {
      field: 'idempotency_key',
    });
  }
  return key;
}

export async function reserveIdempotencyKey(
  store: Store,
  scope: IdempotencyScope,
  request: unknown,
  staleAfterMs = Number.POSITIVE_INFINITY,
): Promise<Reservation> {
  const hash = requestHash(request);
  // This key's record, as a where-clause every query below shares.
  const thisKey = (eb: ExpressionBuilder<Database, 'idempotency_records'>) =>
    eb.and({ organization_id: scope.organizationId, endpoint: scope.endpoint, key: scope.key });

  /**
   * The key as this request owns it: every write is conditional on the `created_at` it inserted, or set when it took
   * a stale key over. A request slow enough to be declared dead and taken over by a retry then finds, before its
   * broadcast (`attach`), that the key is no longer its own, and sends nothing: two requests never both send.
   */
  const ownedBy = (token: string): OwnedReservation => {
    const mine = (eb: ExpressionBuilder<Database, 'idempotency_records'>) => eb.and([thisKey(eb), eb('created_at', '=', token)]);
    return {
      async attach(executionId) {
        const updated = await store
          .updateTable('idempotency_records')
          .where(mine)
          .where('state', '=', 'in_progress')
          .set({ execution_id: executionId })
          .executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) {
          throw new ServiceError(
            409,
            'idempotency_in_progress',
            `Idempotency-Key "${scope.key}" was taken over by a retry while this request was still running; this request sent nothing. Retry to get the result.`,
            { retryable: true },
            { 'Retry-After': '1' },
          );
        }
      },
      async settle(state, executionId, response) {
        await store
          .updateTable('idempotency_records')
          .where(mine)
          .set({ state, execution_id: executionId, response_status: response.status, response_body: JSON.stringify(response.body) })
          .execute();
      },
      async release() {
        await store.deleteFrom('idempotency_records').where(mine).execute();
      },
    };
  };

  for (let attempt = 0; attempt < 2; attempt++) {
    const now = new Date(sharedNow());
    const inserted = await store
      .insertInto('idempotency_records')
      .values({
        organization_id: scope.organizationId,
        endpoint: scope.endpoint,
        key: scope.key,
        request_hash: hash,
        state: 'in_progress',
        execution_id: null,
        response_status: null,
        response_body: null,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS).toISOString(),
      })
      .onConflict((oc) => oc.columns(['organization_id', 'endpoint', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { kind: 'fresh', ...ownedBy(now.toISOString()) };

    const row = await store.selectFrom('idempotency_records').selectAll().where(thisKey).executeTakeFirst();
    if (!row) continue; // released between our insert and read: try again
    if (row.expires_at <= nowIso()) {
      // Outside the 24 h window the key is free again.
      await store.deleteFrom('idempotency_records').where(thisKey).where('expires_at', '=', row.expires_at).execute();
      continue;
    }
    if (row.request_hash !== hash) {
      throw new ServiceError(
        409,
        'idempotency_conflict',
        `Idempotency-Key "${scope.key}" was already used with a different request body on this endpoint; use a new key for a different request.`,
        {
          retryable: false,
          originalExecutionId: row.state === 'in_progress' ? null : row.execution_id,
        },
      );
    }
    if (row.state === 'in_progress' && sharedNow() - Date.parse(row.created_at) > staleAfterMs) {
      // Take the recovery over with a compare-and-swap on created_at: one retrier wins, the others see it in progress.
      // The new owner's token must differ from the old one's, even within the same millisecond.
      const token = new Date(Math.max(sharedNow(), Date.parse(row.created_at) + 1)).toISOString();
      const taken = await store
        .updateTable('idempotency_records')
        .where(thisKey)
        .set({ created_at: token })
        .where('state', '=', 'in_progress')
        .where('created_at', '=', row.created_at)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 1) return { kind: 'stale', executionId: row.execution_id, ...ownedBy(token) };
    }
    if (row.state === 'in_progress') {
      throw new ServiceError(
        409,
        'idempotency_in_progress',
        `A request with Idempotency-Key "${scope.key}" is still running; retry after it finishes to get its result.`,
        {
          retryable: true,
        },
        { 'Retry-After': '1' },
      );
    }
    return { kind: 'replay', response: { status: row.response_status ?? 200, body: JSON.parse(row.response_body ?? 'null') } };
  }
  throw new ServiceError(
    409,
    'idempotency_in_progress',
    `A request with Idempotency-Key "${scope.key}" is changing state; retry.`,
    { retryable: true },
    { 'Retry-After': '1' },
  );
}

/**
 * Where a write leaves its key (SPEC "Idempotency record"): a write that was
 * never broadcast or reverted at inclusion releases it (the same request runs
 * again); a completed one settles it; anything unconfirmed is held.
 */
export async function concludeKey(
  reservation: OwnedReservation,
  outcome: 'released' | 'completed' | 'held',
  executionId: string,
  response: StoredResponse,
): Promise<void> {
  if (outcome === 'released') await reservation.release();
  else await reservation.settle(outcome === 'completed' ? 'settled' : 'held', executionId, response);
}

/**
 * Concludes the key of an execution resolved without the request that owned it (its process died, or it left the
 * execution unconfirmed): only a key still in progress or held for that execution changes, as concludeKey would.
 */
export async function concludeKeyOfExecution(
  store: Store,
  organizationId: string,
  executionId: string,
  outcome: 'released' | 'completed',
  response: StoredResponse,
): Promise<void> {
  const ofExecution = (eb: ExpressionBuilder<Database, 'idempotency_records'>) =>
    eb.and([eb('organization_id', '=', organizationId), eb('execution_id', '=', executionId), eb('state', 'in', ['in_progress', 'held'])]);
  if (outcome === 'released') {
    await store.deleteFrom('idempotency_records').where(ofExecution).execute();
    return;
  }
  await store
    .updateTable('idempotency_records')
    .where(ofExecution)
    .set({ state: 'settled', response_status: response.status, response_body: JSON.stringify(response.body) })
    .execute();
}
