import type { Store } from '../store/db.ts';
import type { PaymentsTable } from '../store/schema.ts';
import { createHash } from 'node:crypto';
import { newId, nowIso } from '../ids.ts';
import { first, prepared } from '../store/prepared.ts';

/**
 * Payment records: one row per EIP-3009 authorization. The unique
 * authorization key is the replay guard: a second presentation of the same
 * signed payment (by either protocol) finds this row instead of running or
 * settling again. The row also binds the authorization to the slug it was
 * first presented to (verified → settled | failed; verified → settling →
 * settled | failed when the call stopped waiting before the settlement's
 * outcome was known; released when its run could not be written, and
 * verified again when it is presented again for the same slug).
 */

export interface AuthorizationRef {
  chainId: number;
  asset: string;
  payer: string;
  nonce: string;
}

export const authorizationKey = (ref: AuthorizationRef) => [ref.chainId, ref.asset, ref.payer, ref.nonce].join(':').toLowerCase();

export const signatureHash = (signature: string) => createHash('sha256').update(signature.toLowerCase()).digest('hex');

// Every paid call runs these (a replay check, then claim, attach and settle): compiled once per store (src/store/prepared.ts).
const selectPayment = prepared<{ key: string }, PaymentsTable>((db: Store, a) => db.selectFrom('payments').selectAll().where('authorization_key', '=', a.key));

export async function findPayment(store: Store, key: string): Promise<PaymentsTable | undefined> {
  return first(selectPayment, store, { key });
}

export interface NewPayment {
  key: string;
  signatureHash: string;
  protocol: 'x402' | 'mpp';
  slug: string;
  network: string;
  asset: string;
  amount: string;
  payer: string;
  payTo: string;
  /** The authorization's validBefore (unix seconds), when it has one. */
  validBefore: string | null;
}

const insertPayment = prepared<NewPayment & { id: string; status: 'verified' | 'released'; now: string }, { id: string }>((db: Store, a) =>
  db
    .insertInto('payments')
    .values({
      id: a.id,
      authorization_key: a.key,
      signature_hash: a.signatureHash,
      protocol: a.protocol,
      listing_slug: a.slug,
      execution_id: null,
      status: a.status,
      network: a.network,
      asset: a.asset,
      amount: a.amount,
      payer: a.payer,
      pay_to: a.payTo,
      transaction_hash: null,
      receipt: null,
      error: null,
      valid_before: a.validBefore,
      created_at: a.now,
      updated_at: a.now,
    })
    .onConflict((oc) =>
      oc
        .column('authorization_key')
        .doUpdateSet({ status: a.status, updated_at: a.now })
        .where('payments.status', '=', 'released')
        .where('payments.listing_slug', '=', a.slug)
        .where('payments.signature_hash', '=', a.signatureHash),
    )
    .returning('id'),
);

/**
 * Inserts the verified payment, or takes back a `released` record of the same
 * signed payment for the same slug; undefined when the authorization already
 * has a live record (a concurrent replay) or is bound to another slug.
 */
export async function claimPayment(store: Store, payment: NewPayment, via?: Store): Promise<{ id: string } | undefined> {
  return first(insertPayment, store, { ...payment, id: newId(), status: 'verified', now: nowIso() }, via);
}

/**
 * The run could not be created (its claim was rolled back with it): the
 * unsettled payment may be presented again, but only for the slug it was first
 * presented to. Writing it `released`, in one statement, keeps that binding:
 * without a record the same authorization could pay for another workflow with
 * the same price and payee. Nothing is written over a live record.
 */
export async function recordReleased(store: Store, payment: NewPayment): Promise<void> {
  await insertPayment(store, { ...payment, id: newId(), status: 'released', now: nowIso() });
}

const setExecution = prepared<{ id: string; executionId: string; now: string }>((db: Store, a) =>
  db.updateTable('payments').set({ execution_id: a.executionId, updated_at: a.now }).where('id', '=', a.id),
);
export const attachExecution = (store: Store, id: string, executionId: string, via?: Store) => setExecution(store, { id, executionId, now: nowIso() }, via);

const setSettled = prepared<{ id: string; hash: string; receipt: string; now: string }>((db: Store, a) =>
  db.updateTable('payments').set({ status: 'settled', transaction_hash: a.hash, receipt: a.receipt, updated_at: a.now }).where('id', '=', a.id),
);
export const markSettled = (store: Store, id: string, transactionHash: string, receipt: unknown, via?: Store) =>
  setSettled(store, { id, hash: transactionHash, receipt: JSON.stringify(receipt), now: nowIso() }, via);

// Only from `verified`: a payment the chain sweep already resolved (pending-payments.ts) keeps what the chain said.
const setFailed = prepared<{ id: string; error: string; now: string }>((db: Store, a) =>
  db.updateTable('payments').set({ status: 'failed', error: a.error, updated_at: a.now }).where('id', '=', a.id).where('status', '=', 'verified'),
);
export const markFailed = (store: Store, id: string, error: string) => setFailed(store, { id, error, now: nowIso() });

const setSettling = prepared<{ id: string; hash: string | null; now: string }>((db: Store, a) =>
  db.updateTable('payments').set({ status: 'settling', transaction_hash: a.hash, updated_at: a.now }).where('id', '=', a.id).where('status', '=', 'verified'),
);
/** Sent, but not known to be mined: resolved from the chain later (src/catalog/pending-payments.ts). */
export const markSettling = (store: Store, id: string, transactionHash: string | undefined) =>
  setSettling(store, { id, hash: transactionHash ?? null, now: nowIso() });

/** Payments whose outcome is resolved from the chain: `settling` ones, and `verified` ones left since before `staleBefore` with a run. */
export function unresolvedPayments(store: Store, staleBefore: string, limit: number): Promise<PaymentsTable[]> {
  return store
    .selectFrom('payments')
    .selectAll()
    .where((eb) =>
      eb.or([eb('status', '=', 'settling'), eb.and([eb('status', '=', 'verified'), eb('updated_at', '<', staleBefore), eb('execution_id', 'is not', null)])]),
    )
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

/**
 * The chain's answer for an unresolved payment, written only if the row is still as it was read (`status`), so two
 * instances resolving the same payment write it once; true when this one did.
 */
export async function resolvePayment(
  store: Store,
  row: Pick<PaymentsTable, 'id' | 'status'>,
  outcome: { settled: { hash: string; receipt: unknown } } | { failed: string },
): Promise<boolean> {
  const now = nowIso();
  const set =
    'settled' in outcome
      ? { status: 'settled' as const, transaction_hash: outcome.settled.hash, receipt: JSON.stringify(outcome.settled.receipt), updated_at: now }
      : { status: 'failed' as const, error: outcome.failed, updated_at: now };
  const result = await store.updateTable('payments').set(set).where('id', '=', row.id).where('status', '=', row.status).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Runs of settled payments still waiting to start, settled before `settledBefore` (the process stopped between the two writes). */
export async function settledButWaiting(store: Store, settledBefore: string, limit: number): Promise<string[]> {
  // From the waiting runs (few, on the status index) to their payments, not from every settled payment.
  const rows = await store
    .selectFrom('workflow_executions')
    .innerJoin('payments', 'payments.execution_id', 'workflow_executions.id')
    .select('workflow_executions.id')
    .where('workflow_executions.status', '=', 'awaiting_payment')
    .where('payments.status', '=', 'settled')
    .where('payments.updated_at', '<', settledBefore)
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}
