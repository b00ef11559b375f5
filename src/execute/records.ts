import type { Transaction } from 'kysely';
import type { Hex } from 'viem';
import { z } from 'zod';
import { verifiedReceiptSchema, type VerifiedReceipt } from '../chains/transactions.ts';
import { transactionLink, type ChainCatalog } from '../chains/catalog.ts';
import { nowIso } from '../ids.ts';
import { endedBeforeSigning } from '../guards/spend-cap.ts';
import type { Store } from '../store/db.ts';
import type { Database, DirectExecutionsTable } from '../store/schema.ts';
import { ServiceError } from '../errors.ts';

/** SPEC "Direct execution record": the row as every direct-execution route returns it. */

export const directRecordSchema = z.object({
  executionId: z.string().describe('21-character opaque id; poll GET /api/execute/{executionId}/status'),
  type: z.string(),
  status: z.enum(['pending', 'completed', 'failed', 'unconfirmed']).describe('unconfirmed is not terminal: keep polling while pollIntervalHint > 0'),
  chainId: z.number(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  value: z.string().describe('Native value in wei'),
  transactionHash: z.string().optional(),
  transactionLink: z.string().optional(),
  sponsored: z.boolean(),
  pollIntervalHint: z.number().describe('Seconds until the next useful poll; 0 means terminal'),
  receipts: z.array(verifiedReceiptSchema),
  result: z.unknown().optional(),
  error: z.string().optional(),
  gasUsedWei: z.string().nullable(),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
  idempotentReplay: z.boolean().optional().describe('Present (true) only on a replay of a stored response'),
});
export type DirectExecutionRecord = z.output<typeof directRecordSchema>;
export type DirectStatus = DirectExecutionRecord['status'];

export const directPollHint = (status: string) => (status === 'unconfirmed' ? 5 : status === 'pending' ? 1 : 0);

export function toRecord(chains: ChainCatalog, row: DirectExecutionsTable): DirectExecutionRecord {
  const status = row.status as DirectStatus;
  // SPEC: the hash and link are shown when the step reported success (or is still being confirmed).
  const showHash = row.transaction_hash && (status === 'completed' || status === 'unconfirmed');
  return {
    executionId: row.id,
    type: row.type,
    status,
    chainId: row.chain_id,
    from: row.from_address,
    to: row.to_address,
    value: row.value_wei,
    ...(showHash ? { transactionHash: row.transaction_hash!, transactionLink: transactionLink(chains, row.chain_id, row.transaction_hash!) } : {}),
    sponsored: false,
    pollIntervalHint: directPollHint(status),
    receipts: JSON.parse(row.receipts) as VerifiedReceipt[],
    ...(row.result ? { result: JSON.parse(row.result) } : {}),
    ...(row.error ? { error: row.error } : {}),
    gasUsedWei: row.gas_used_wei,
    createdAt: row.created_at,
    completedAt: row.completed_at,
  };
}

export async function insertPending(
  trx: Transaction<Database> | Store,
  row: {
    id: string;
    organizationId: string;
    apiKeyId: string | null;
    type: string;
    chainId: number;
    from: string | null;
    to: string | null;
    valueWei: bigint;
    result?: unknown;
  },
): Promise<void> {
  await trx
    .insertInto('direct_executions')
    .values({
      id: row.id,
      organization_id: row.organizationId,
      api_key_id: row.apiKeyId,
      type: row.type,
      chain_id: row.chainId,
      status: 'pending',
      from_address: row.from,
      to_address: row.to,
      value_wei: row.valueWei.toString(),
      transaction_hash: null,
      signed_transaction: null,
      receipts: '[]',
      result: row.result === undefined ? null : JSON.stringify(row.result),
      error: null,
      gas_used_wei: null,
      created_at: nowIso(),
      completed_at: null,
    })
    .execute();
}

/**
 * Stores the signed bytes of a `pending` execution before they leave the process. None stored (the row is no longer
 * pending): the interrupted-execution sweep ended it, taking this request for one whose process died; the throw
 * stops the broadcast, so the two never disagree about whether it was sent.
 */
export async function storeSigned(store: Store, id: string, hash: Hex, raw: Hex): Promise<void> {
  const stored = await store
    .updateTable('direct_executions')
    .set({ transaction_hash: hash, signed_transaction: raw })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (Number(stored.numUpdatedRows) === 0) {
    throw endedBeforeSigning(id, 'it was ended as interrupted');
  }
}

/** The status a set of receipts settles to: every one verified → completed; a revert/not_found/timeout → failed; else unconfirmed. */
export function statusFromReceipts(receipts: readonly VerifiedReceipt[]): DirectStatus {
  if (receipts.some((r) => r.receiptStatus === 'reverted' || r.receiptStatus === 'not_found' || r.receiptStatus === 'timeout')) return 'failed';
  if (receipts.every((r) => r.verified)) return 'completed';
  return 'unconfirmed';
}

const notFoundExecution = (id: string) => new ServiceError(404, 'not_found', `No direct execution ${id} in this organization.`);

/** Writes an execution's outcome; with `from`, only over that status (true when written), so two resolvers write it once. */
export async function finish(
  store: Store,
  id: string,
  outcome: { status: DirectStatus; receipts?: VerifiedReceipt[]; error?: string | null; result?: unknown },
  from?: string,
): Promise<boolean> {
  const gas = outcome.receipts?.reduce((sum, r) => sum + BigInt(r.gasUsedWei ?? 0), 0n);
  const written = await store
    .updateTable('direct_executions')
    .set({
      status: outcome.status,
      ...(outcome.receipts ? { receipts: JSON.stringify(outcome.receipts) } : {}),
      ...(gas !== undefined && outcome.receipts?.some((r) => r.gasUsedWei) ? { gas_used_wei: gas.toString() } : {}),
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
      ...(outcome.result !== undefined ? { result: JSON.stringify(outcome.result) } : {}),
      completed_at: outcome.status === 'unconfirmed' || outcome.status === 'pending' ? null : nowIso(),
    })
    .where('id', '=', id)
    .$if(from !== undefined, (q) => q.where('status', '=', from!))
    .executeTakeFirst();
  return Number(written.numUpdatedRows) > 0;
}

/**
 * Ends a `pending` execution that was never signed as failed; false when it is no longer pending or its bytes were
 * stored meanwhile (its request is alive after all, and its broadcast goes ahead).
 */
export async function failUnsigned(store: Store, id: string, error: string): Promise<boolean> {
  const written = await store
    .updateTable('direct_executions')
    .set({ status: 'failed', receipts: '[]', error, completed_at: nowIso() })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('signed_transaction', 'is', null)
    .executeTakeFirst();
  return Number(written.numUpdatedRows) > 0;
}

export async function loadRecord(store: Store, organizationId: string, id: string): Promise<DirectExecutionsTable> {
  const row = await store.selectFrom('direct_executions').selectAll().where('id', '=', id).where('organization_id', '=', organizationId).executeTakeFirst();
  if (!row) throw notFoundExecution(id);
  return row;
}
