import { parseTransaction, type Hex, type PublicClient } from 'viem';
import { rebroadcast, verifyTransaction } from '../chains/transactions.ts';
import { concludeKey, concludeKeyOfExecution, replayBody, type reserveIdempotencyKey } from '../guards/idempotency.ts';
import { settleSpendForExecution, spendOutcome } from '../guards/spend-cap.ts';
import { receiptError } from '../onchain/receipts.ts';
import type { Services } from '../services.ts';
import type { DirectExecutionsTable } from '../store/schema.ts';
import type { Store } from '../store/db.ts';
import { groupCommit } from '../store/group-commit.ts';
import type { DirectCaller, DirectResponse } from './caller.ts';
import { failUnsigned, finish, loadRecord, statusFromReceipts, toRecord, type DirectExecutionRecord } from './records.ts';

/**
 * Finishing a direct execution from the chain when the request that sent it
 * could not: a retry with the same idempotency key after its process died
 * (recoverInterrupted), a status read of an unconfirmed execution
 * (refreshRecord), and the sweep over executions no request will finish
 * (interrupted-sweep.ts). Stored bytes are re-sent, never re-signed (same
 * nonce, same hash: they can never spend twice).
 */

const NOT_SIGNED = 'The gateway stopped before this transaction was signed; nothing was broadcast.';

/**
 * An execution's outcome and its spend reservation's settlement (`spend`: none while the chain has not decided), in one
 * transaction: a status read never finds it ended with its value still counted, or the other way round. False, with
 * nothing written, when `write` finds the row no longer as read.
 */
function concludeWith(store: Store, id: string, write: (via: Store) => Promise<boolean>, spend: 'spent' | 'released' | undefined): Promise<boolean> {
  return groupCommit(store, async (trx) => {
    if (!(await write(trx))) return false;
    if (spend) await settleSpendForExecution(store, id, spend, trx);
    return true;
  });
}

/** A retry that took over a stale key: checks the chain before anything is signed again; undefined when nothing was broadcast (the caller runs the request afresh). */
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
    if (row) await concludeWith(services.store, row.id, (via) => failUnsigned(via, row.id, NOT_SIGNED), 'released');
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
  await concludeWith(
    services.store,
    row.id,
    (via) => finish(via, row.id, { status, receipts, error: receiptError(receipts) ?? null }),
    spendOutcome(receipt.receiptStatus),
  );
  const response: DirectResponse = { status: 202, body: toRecord(services.chains, await loadRecord(services.store, caller.organizationId, row.id)) };
  await concludeKey(reservation, receipt.receiptStatus === 'reverted' ? 'released' : status === 'completed' ? 'completed' : 'held', row.id, response);
  return { status: response.status, body: replayBody(response.body) };
}

/**
 * Whether the transaction can never be mined: its sender's mined nonce is past it and the chain holds no receipt for
 * it (read in that order, so a transaction mined in between is found), i.e. another transaction used its nonce.
 */
async function nonceUsedByAnother(client: PublicClient, row: DirectExecutionsTable): Promise<boolean> {
  if (!row.from_address) return false;
  const { nonce } = parseTransaction(row.signed_transaction as Hex);
  if (nonce === undefined) return false;
  const mined = await client.getTransactionCount({ address: row.from_address as Hex, blockTag: 'latest' });
  if (mined <= nonce) return false;
  const again = await verifyTransaction(client, row.transaction_hash as Hex, 1_000);
  return again.receiptStatus === 'not_found' || again.receiptStatus === 'timeout';
}

/**
 * An execution no live request will finish (`pending` past longestSendMs, or `unconfirmed`), resolved by what
 * the chain says: mined, it ends completed or failed; never to be mined (never signed, or its nonce used by another
 * transaction), it ends failed; otherwise it stays unconfirmed (a `pending` one becomes so), its bytes sent again when
 * `resend`. Written only over the status read (two resolvers write once); the winner settles the day's spend
 * reservation and concludes the idempotency key as the request would have.
 */
export async function resolveFromChain(services: Services, row: DirectExecutionsTable, options: { waitMs: number; resend: boolean }): Promise<void> {
  const { store } = services;
  if (!row.signed_transaction || !row.transaction_hash) {
    // Never signed (its key, attached only once signed, is the retry's to release): ended only if still unsigned as it
    // is written, since a request alive after all stores its bytes first.
    if (row.status === 'pending') await concludeWith(store, row.id, (via) => failUnsigned(via, row.id, NOT_SIGNED), 'released');
    return;
  }
  const client = services.chainClients.publicClient(row.chain_id);
  const receipt = await verifyTransaction(client, row.transaction_hash as Hex, options.waitMs);
  const unmined = receipt.receiptStatus === 'not_found' || receipt.receiptStatus === 'timeout';
  const replaced = unmined && (await nonceUsedByAnother(client, row));
  if (!receipt.receiptStatus || (unmined && !replaced)) {
    // Not decided yet: it may still be mined.
    if (unmined && options.resend) await rebroadcast(client, row.signed_transaction as Hex).catch(() => {});
    if (row.status === 'pending') await finish(store, row.id, { status: 'unconfirmed', error: null }, 'pending');
    return;
  }
  const outcome = replaced
    ? {
        status: 'failed' as const,
        receipts: [{ ...receipt, receiptStatus: 'not_found' as const }],
        error: `Transaction ${row.transaction_hash} was never mined: nonce ${parseTransaction(row.signed_transaction as Hex).nonce} of ${row.from_address} was used by another transaction. Nothing was moved by it.`,
      }
    : { status: statusFromReceipts([receipt]), receipts: [receipt], error: receiptError([receipt]) ?? null };
  // Nothing moved (reverted, or never to be mined): the reservation is released and the key runs again.
  const spend = replaced ? 'released' : spendOutcome(receipt.receiptStatus);
  if (!(await concludeWith(store, row.id, (via) => finish(via, row.id, outcome, row.status), spend))) return;
  const response = { status: 202, body: toRecord(services.chains, await loadRecord(store, row.organization_id, row.id)) };
  await concludeKeyOfExecution(store, row.organization_id, row.id, spend === 'spent' ? 'completed' : 'released', response);
  if (options.resend) console.error(`[flowgate] direct execution ${row.id}, left ${row.status} by its request, ended ${outcome.status} from the chain`);
}

const STATUS_POLL_TIMEOUT_MS = 2_000;

/** Status reads re-verify an unconfirmed execution against the chain, so it settles once receipts are readable. */
export async function refreshRecord(services: Services, organizationId: string, id: string): Promise<DirectExecutionRecord> {
  const row = await loadRecord(services.store, organizationId, id);
  if (row.status !== 'unconfirmed') return toRecord(services.chains, row);
  // A read stays a read: if what the chain says cannot be written now, the record is answered as stored (keep polling).
  await resolveFromChain(services, row, { waitMs: STATUS_POLL_TIMEOUT_MS, resend: false }).catch((error: unknown) =>
    console.error(`[flowgate] status read of direct execution ${id}: could not record its outcome (${error instanceof Error ? error.message : String(error)})`),
  );
  return toRecord(services.chains, await loadRecord(services.store, organizationId, id));
}
