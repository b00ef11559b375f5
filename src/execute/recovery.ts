import type { Hex } from 'viem';
import { rebroadcast, verifyTransaction } from '../chains/transactions.ts';
import { concludeKey, replayBody, type reserveIdempotencyKey } from '../guards/idempotency.ts';
import { settleSpendForExecution, spendOutcome } from '../guards/spend-cap.ts';
import { receiptError } from '../onchain/receipts.ts';
import type { Services } from '../services.ts';
import type { DirectCaller, DirectResponse } from './caller.ts';
import { finish, loadRecord, statusFromReceipts, toRecord } from './records.ts';

/**
 * Recovers an execution whose process died mid-flight, checking the chain
 * before anything is signed again: stored bytes are re-sent (same nonce, same
 * hash: they can never spend twice) and verified. Without stored bytes
 * nothing was broadcast: the row fails, the key is released, and the caller
 * runs the request afresh (returns undefined).
 */
export async function recoverInterrupted(
  services: Services,
  caller: DirectCaller,
  reservation: Extract<Awaited<ReturnType<typeof reserveIdempotencyKey>>, { kind: 'stale' }>,
): Promise<DirectResponse | undefined> {
  const row = reservation.executionId
    ? await services.store
        .selectFrom('direct_executions')
        .selectAll()
        .where('id', '=', reservation.executionId)
        .where('organization_id', '=', caller.organizationId)
        .executeTakeFirst()
    : undefined;
  if (!row?.signed_transaction || !row.transaction_hash) {
    if (row) {
      await finish(services.store, row.id, {
        status: 'failed',
        receipts: [],
        error: 'The gateway stopped before this transaction was signed; nothing was broadcast.',
      });
      await settleSpendForExecution(services.store, row.id, 'released');
    }
    await reservation.release();
    return undefined;
  }
  const client = services.chainClients.publicClient(row.chain_id);
  let receipt = await verifyTransaction(client, row.transaction_hash as Hex, 2_000);
  if (receipt.receiptStatus === 'not_found' || receipt.receiptStatus === 'timeout') {
    await rebroadcast(client, row.signed_transaction as Hex).catch(() => {});
    receipt = await verifyTransaction(client, row.transaction_hash as Hex, services.config.receiptTimeoutMs);
  }
  const receipts = [receipt];
  const status = statusFromReceipts(receipts);
  await finish(services.store, row.id, { status, receipts, error: receiptError(receipts) ?? null });
  const spend = spendOutcome(receipt.receiptStatus);
  if (spend) await settleSpendForExecution(services.store, row.id, spend);
  const response: DirectResponse = { status: 202, body: toRecord(services.chains, await loadRecord(services.store, caller.organizationId, row.id)) };
  await concludeKey(reservation, receipt.receiptStatus === 'reverted' ? 'released' : status === 'completed' ? 'completed' : 'held', row.id, response);
  return { status: response.status, body: replayBody(response.body) };
}
