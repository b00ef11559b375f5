import type { Hex } from 'viem';
import { verifyTransaction, type VerifiedReceipt } from '../chains/transactions.ts';
import { nowIso } from '../ids.ts';
import type { Services } from '../services.ts';
import type { Completion, TransactionHashEntry } from './executions.ts';

/**
 * The terminal verification pass (DESIGN "Engine"): every transaction hash a
 * run claimed is re-fetched from chain before the run settles. `success` only
 * when every one is verified; a revert, `not_found` or `timeout` fails the run
 * closed; a chain we could not read leaves it `unconfirmed`, re-checked by
 * the worker's sweep until it settles.
 */

/** Receipts were already awaited by the step; this pass only re-reads them. */
const REFETCH_TIMEOUT_MS = 5_000;

function merge(entry: TransactionHashEntry, receipt: VerifiedReceipt): TransactionHashEntry {
  return {
    ...entry,
    verified: receipt.verified,
    ...(receipt.receiptStatus ? { receiptStatus: receipt.receiptStatus } : {}),
    ...(receipt.blockNumber !== undefined ? { blockNumber: receipt.blockNumber } : {}),
    ...(receipt.gasUsed !== undefined ? { gasUsed: receipt.gasUsed } : {}),
    // Kept per transaction so analytics can tell gas per chain (the run's gas_used_wei is the total of all chains).
    ...(receipt.gasUsedWei !== undefined ? { gasUsedWei: receipt.gasUsedWei } : {}),
    verifiedAt: receipt.verifiedAt,
  };
}

interface Verification {
  entries: TransactionHashEntry[];
  /** A hash that failed on chain (reverted, not found, timed out): the run fails closed. */
  failure?: string;
  allVerified: boolean;
  gasUsedWei: string | null;
}

export async function verifyEntries(services: Services, entries: readonly TransactionHashEntry[]): Promise<Verification> {
  let gas = 0n;
  let anyGas = false;
  const verified = await Promise.all(
    entries.map(async (entry) => {
      if (entry.chainId === undefined) return { ...entry, verified: false, verifiedAt: nowIso() };
      const client = services.chainClients.publicClient(entry.chainId);
      const receipt = await verifyTransaction(client, entry.hash as Hex, Math.min(REFETCH_TIMEOUT_MS, services.config.receiptTimeoutMs));
      if (receipt.gasUsedWei) {
        gas += BigInt(receipt.gasUsedWei);
        anyGas = true;
      }
      return merge(entry, receipt);
    }),
  );
  const bad = verified.find((e) => e.receiptStatus === 'reverted' || e.receiptStatus === 'not_found' || e.receiptStatus === 'timeout');
  const failure = bad
    ? bad.receiptStatus === 'reverted'
      ? `Transaction ${bad.hash} from node "${bad.nodeName}" (${bad.nodeId}) reverted on chain.`
      : bad.receiptStatus === 'not_found'
        ? `Transaction ${bad.hash} from node "${bad.nodeName}" (${bad.nodeId}) was not found on chain.`
        : `Transaction ${bad.hash} from node "${bad.nodeName}" (${bad.nodeId}) was not confirmed in time; it may still be mined.`
    : undefined;
  return { entries: verified, failure, allVerified: verified.every((e) => e.verified === true), gasUsedWei: anyGas ? gas.toString() : null };
}

/** Applies the verification pass to a finished run's completion. */
export async function settleWithVerification(services: Services, completion: Completion): Promise<Completion> {
  const entries = completion.transactionHashes ?? [];
  if (entries.length === 0) return completion;
  const v = await verifyEntries(services, entries);
  const settled: Completion = { ...completion, transactionHashes: v.entries, gasUsedWei: v.gasUsedWei };
  if (completion.status !== 'success' && completion.status !== 'unconfirmed') return settled;
  if (v.failure) return { ...settled, status: 'error', error: v.failure, errorContext: { reason: 'transaction_failed' } };
  if (v.allVerified) return { ...settled, status: 'success', errorContext: null };
  return { ...settled, status: 'unconfirmed', errorContext: { reason: 'transactions_unverified' } };
}

/** Re-verifies runs left `unconfirmed`; returns the ones that settled with their new status. */
export async function reverifyUnconfirmed(services: Services): Promise<{ id: string; status: string }[]> {
  const rows = await services.store
    .selectFrom('workflow_executions')
    .select(['id', 'transaction_hashes', 'status'])
    .where('status', '=', 'unconfirmed')
    .limit(50)
    .execute();
  const settled: { id: string; status: string }[] = [];
  for (const row of rows) {
    const completion = await settleWithVerification(services, { status: 'unconfirmed', transactionHashes: JSON.parse(row.transaction_hashes ?? '[]') });
    if (completion.status === 'unconfirmed') continue;
    const result = await services.store
      .updateTable('workflow_executions')
      .set({
        status: completion.status,
        error: completion.error ?? null,
        error_context: completion.errorContext ? JSON.stringify(completion.errorContext) : null,
        transaction_hashes: JSON.stringify(completion.transactionHashes),
        gas_used_wei: completion.gasUsedWei ?? null,
        completed_at: nowIso(),
        lease_expires_at: null,
      })
      .where('id', '=', row.id)
      .where('status', '=', 'unconfirmed')
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) settled.push({ id: row.id, status: completion.status });
  }
  return settled;
}
