import type { Store } from '../store/db.ts';
import type { PaymentsTable } from '../store/schema.ts';
import { createHash } from 'node:crypto';
import { newId, nowIso } from '../ids.ts';

/**
 * Payment records: one row per EIP-3009 authorization. The unique
 * authorization key is the replay guard: a second presentation of the same
 * signed payment (by either protocol) finds this row instead of running or
 * settling again. The row also binds the authorization to the slug it was
 * first presented to (verified → settled | failed | released).
 */

export interface AuthorizationRef {
  chainId: number;
  asset: string;
  payer: string;
  nonce: string;
}

export const authorizationKey = (ref: AuthorizationRef) => [ref.chainId, ref.asset, ref.payer, ref.nonce].join(':').toLowerCase();

export const signatureHash = (signature: string) => createHash('sha256').update(signature.toLowerCase()).digest('hex');

export async function findPayment(store: Store, key: string): Promise<PaymentsTable | undefined> {
  return store.selectFrom('payments').selectAll().where('authorization_key', '=', key).executeTakeFirst();
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
}

/**
 * Inserts the verified payment, or takes back a `released` record of the same
 * signed payment for the same slug; undefined when the authorization already
 * has a live record (a concurrent replay) or is bound to another slug.
 */
export async function claimPayment(store: Store, payment: NewPayment): Promise<{ id: string } | undefined> {
  const id = newId();
  const now = nowIso();
  return store
    .insertInto('payments')
    .values({
      id,
      authorization_key: payment.key,
      signature_hash: payment.signatureHash,
      protocol: payment.protocol,
      listing_slug: payment.slug,
      execution_id: null,
      status: 'verified',
      network: payment.network,
      asset: payment.asset,
      amount: payment.amount,
      payer: payment.payer,
      pay_to: payment.payTo,
      transaction_hash: null,
      receipt: null,
      error: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc
        .column('authorization_key')
        .doUpdateSet({ status: 'verified', updated_at: now })
        .where('payments.status', '=', 'released')
        .where('payments.listing_slug', '=', payment.slug)
        .where('payments.signature_hash', '=', payment.signatureHash),
    )
    .returning('id')
    .executeTakeFirst();
}

/**
 * The run could not be created: the (unsettled) payment may be presented
 * again, but only for the slug it was first presented to. Keeping the record
 * keeps that binding: deleting it would let the same authorization pay for
 * another workflow with the same price and payee.
 */
export const releasePayment = (store: Store, id: string) =>
  store
    .updateTable('payments')
    .set({ status: 'released', execution_id: null, updated_at: nowIso() })
    .where('id', '=', id)
    .where('status', '=', 'verified')
    .execute();

export const attachExecution = (store: Store, id: string, executionId: string) =>
  store.updateTable('payments').set({ execution_id: executionId, updated_at: nowIso() }).where('id', '=', id).execute();

export const markSettled = (store: Store, id: string, transactionHash: string, receipt: unknown) =>
  store
    .updateTable('payments')
    .set({ status: 'settled', transaction_hash: transactionHash, receipt: JSON.stringify(receipt), updated_at: nowIso() })
    .where('id', '=', id)
    .execute();

export const markFailed = (store: Store, id: string, error: string) =>
  store.updateTable('payments').set({ status: 'failed', error, updated_at: nowIso() }).where('id', '=', id).execute();
