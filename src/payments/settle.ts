import { ServiceError } from '../errors.ts';
import { paymentRequired } from './challenge.ts';
import type { PaymentContext } from './context.ts';
import { errorText, SettlementPendingError, type ChargeResult, type PaidResource, type PaymentReceipt, type RunGate } from './paid-call.ts';
import { attachExecution, claimPayment, findPayment, markFailed, markSettled, markSettling, recordReleased, type NewPayment } from './records.ts';
import type { Store } from '../store/db.ts';
import { groupCommit } from '../store/group-commit.ts';

/**
 * From a verified payment to a started run, through the payment record
 * (records.ts): replays get their original execution, and a payment is
 * claimed before its run is prepared and settled before the run may start.
 */

/** How long a settled payment's answer is given again to a retry of the same call (a client whose answer was lost). */
export const REPLAY_WINDOW_MS = 10 * 60_000;

/** The record of an authorization seen before: its original execution, or a clear refusal. */
export async function replay(ctx: PaymentContext, resource: PaidResource, key: string, sigHash: string, run: RunGate): Promise<ChargeResult | undefined> {
  const existing = await findPayment(ctx.store, key);
  if (!existing) return undefined;
  // Payer and nonce are public once settled, and so is the signature (the settlement's calldata): a replay is answered
  // only with the exact signed payment, for the same call, soon after (below).
  if (existing.signature_hash !== sigHash) throw await paymentRequired(ctx, resource, 'this authorization (payer and nonce) was already used');
  if (existing.listing_slug !== resource.slug) {
    const why =
      existing.status === 'released'
        ? `this payment was presented for ${existing.listing_slug} first and can only pay for that workflow`
        : `this payment was already used for a call to ${existing.listing_slug}`;
    throw await paymentRequired(ctx, resource, why);
  }
  // Verified earlier but never settled (the run could not start): verify again and take the record back.
  if (existing.status === 'released') return undefined;
  // Sent, outcome not known yet: the same call gets its run's id again (it starts once the chain says it paid).
  if (existing.status === 'settling' && existing.execution_id && (await run.isSameCall(existing.execution_id))) {
    return { executionId: existing.execution_id, replayed: true, pending: { transaction: existing.transaction_hash ?? undefined } };
  }
  if (existing.status === 'failed') throw await paymentRequired(ctx, resource, `this payment failed to settle earlier (${existing.error ?? 'unknown reason'})`);
  if (existing.status !== 'settled' || !existing.execution_id || !existing.receipt) {
    throw new ServiceError(409, 'payment_in_progress', 'This payment is being processed by another request; retry in a moment to get its executionId.', {
      retryable: true,
    });
  }
  if (Date.parse(existing.updated_at) + REPLAY_WINDOW_MS < Date.now()) {
    throw await paymentRequired(
      ctx,
      resource,
      `this payment was already used; a payment pays for one call (its answer is given again only for ${REPLAY_WINDOW_MS / 60_000} minutes)`,
    );
  }
  if (!(await run.isSameCall(existing.execution_id))) {
    throw await paymentRequired(ctx, resource, 'this payment already paid for a call with other inputs; a payment pays for one call');
  }
  const receipt = JSON.parse(existing.receipt) as PaymentReceipt;
  return { executionId: existing.execution_id, replayed: true, receipt };
}

/**
 * The payment claimed and its run written, in one transaction: a stop between the two would leave an authorization
 * `verified` with no run, answered "in progress" for ever, or a run waiting for a payment that has no record. If the
 * run cannot be written, the payment is recorded `released` (bound to this slug, see recordReleased) and the payer
 * told it was not charged; undefined when another request holds the authorization.
 */
async function claimWithRun(store: Store, claim: NewPayment, run: RunGate): Promise<{ id: string; executionId: string } | undefined> {
  try {
    return await groupCommit(store, async (trx) => {
      const claimed = await claimPayment(store, claim, trx);
      if (!claimed) return undefined;
      const executionId = await run.prepare(trx);
      await attachExecution(store, claimed.id, executionId, trx);
      return { id: claimed.id, executionId };
    });
  } catch (error) {
    await recordReleased(store, claim).catch(() => {});
    if (error instanceof ServiceError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    // A raw database error would be a 500 that says neither that nothing was charged nor that a retry may work.
    throw new ServiceError(
      503,
      'run_not_started',
      `The run could not be started (${reason}); the payment was not settled and nothing was charged. Retry with the same payment.`,
      { retryable: true },
    );
  }
}

/**
 * Claim and write the run → settle → release; undoes exactly what happened when a step fails. A settlement whose
 * transaction was sent but not mined in time (SettlementPendingError) is left `settling` with its run waiting.
 */
export async function settleAndRun(
  ctx: PaymentContext,
  resource: PaidResource,
  claim: NewPayment,
  run: RunGate,
  settle: () => Promise<{ transaction: string; receipt: PaymentReceipt }>,
): Promise<ChargeResult> {
  const { store } = ctx;
  const claimed = await claimWithRun(store, claim, run);
  if (!claimed) {
    const replayed = await replay(ctx, resource, claim.key, claim.signatureHash, run);
    if (replayed) return replayed;
    throw new ServiceError(409, 'payment_in_progress', 'This payment is being processed by another request; retry in a moment.', { retryable: true });
  }
  const { executionId } = claimed;
  let settled: { transaction: string; receipt: PaymentReceipt };
  try {
    settled = await settle();
  } catch (error) {
    if (error instanceof SettlementPendingError) {
      // It may still be mined: neither failed nor abandoned, but resolved from the chain (its run waits meanwhile).
      await markSettling(store, claimed.id, error.transaction);
      return { executionId, replayed: false, pending: { transaction: error.transaction } };
    }
    const reason = errorText(error);
    await markFailed(store, claimed.id, reason);
    await run.abandon(executionId, `Payment settlement failed: ${reason}`);
    throw await paymentRequired(ctx, resource, `settlement failed (${reason})`);
  }
  // The settled record and the run's release land together (one commit on SQLite).
  await run.release(executionId, (via) => markSettled(store, claimed.id, settled.transaction, settled.receipt, via));
  return { executionId, replayed: false, receipt: settled.receipt };
}
