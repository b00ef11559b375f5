import type { Transaction } from 'kysely';
import type { Abi, Hex, TransactionReceipt } from 'viem';
import {
  BroadcastRejectedError,
  PreflightError,
  signAndBroadcast,
  verifyTransaction,
  type TransactionRequest,
  type VerifiedReceipt,
} from '../chains/transactions.ts';
import { noteReservationSigned, reserveSpend, settleSpend, spendOutcome } from '../guards/spend-cap.ts';
import { stablecoinLimitViolation } from '../guards/stablecoin-limit.ts';
import type { Services } from '../services.ts';
import type { Database } from '../store/schema.ts';
import { organizationAccount } from '../wallets/signer.ts';

/**
 * The one write path (DESIGN "Money paths") after validation and the
 * idempotency reservation: spend-cap reservation atomically with the caller's
 * record → stablecoin limit → sign and store hash → broadcast → verify the
 * receipt → settle the reservation. Direct execution and workflow steps both
 * call this; nothing else signs.
 */

/**
 * The longest a guarded send can take: the receipt wait plus estimation and signing. A send's records (a pending
 * direct execution, a held spend reservation) older than this lost their process, and sweeps settle them.
 */
export const longestSendMs = (receiptTimeoutMs: number) => receiptTimeoutMs + 120_000;

export interface WriteIntent {
  organizationId: string;
  chainId: number;
  request: TransactionRequest;
  /** For decoding revert reasons (the call's ABI plus any extra error ABIs). */
  abi?: Abi;
  gasLimitMultiplier?: string;
}

export interface WriteHooks {
  source: 'direct' | 'workflow';
  /** The execution the spend reservation belongs to. */
  executionId: string;
  /** Writes the caller's own record in the same transaction as the spend reservation. */
  insertRecord?(trx: Transaction<Database>, from: string): Promise<void>;
  /** Persists the hash (and raw bytes) before broadcast. */
  onSigned(hash: Hex, raw: Hex): Promise<void>;
  /** onSigned overwrites what it stored before (src/chains/transactions.ts SendOptions.replaceable): signing may then overlap this wallet's earlier sends. */
  replaceable?: boolean;
}

export type WriteOutcome =
  /** Refused before anything left the process: nothing signed, or signed bytes the node rejected. */
  | { kind: 'refused'; from: string; error: string; code: 'stablecoin_limit' | 'would_revert' | 'gas_cap' | 'broadcast_rejected' }
  | { kind: 'sent'; from: string; hash: Hex; receipt: VerifiedReceipt };

export async function guardedSend(services: Services, intent: WriteIntent, hooks: WriteHooks): Promise<WriteOutcome> {
  const { store, config } = services;
  const account = await organizationAccount(store, services.secrets, intent.organizationId);
  const from = account.address;

  let reservationId: string | undefined;
  await store.transaction().execute(async (trx) => {
    await hooks.insertRecord?.(trx, from);
    if (intent.request.value > 0n) {
      reservationId = await reserveSpend(trx, config, {
        organizationId: intent.organizationId,
        asset: 'evm-native',
        amount: intent.request.value,
        source: hooks.source,
        executionId: hooks.executionId,
        chainId: intent.chainId,
      });
    }
  });
  const release = async () => {
    if (reservationId) await settleSpend(store, reservationId, 'released');
  };

  const violation = stablecoinLimitViolation(services.stablecoins, config.spend.stablecoinCapMicroUsd, { chainId: intent.chainId, ...intent.request });
  if (violation) {
    await release();
    return { kind: 'refused', from, error: violation, code: 'stablecoin_limit' };
  }

  const client = services.chainClients.publicClient(intent.chainId);
  let hash: Hex;
  let mined: TransactionReceipt | undefined;
  let signed: Hex | undefined;
  try {
    ({ hash, receipt: mined } = await signAndBroadcast({ client, account, nonces: services.nonces }, intent.request, {
      gasLimitMultiplier: intent.gasLimitMultiplier,
      abi: intent.abi,
      replaceable: hooks.replaceable,
      onSigned: async (h, raw) => {
        // Noted on the reservation first: one the stale-reservation sweep released stops the broadcast here.
        if (reservationId) await noteReservationSigned(store, { id: reservationId, executionId: hooks.executionId }, h);
        await hooks.onSigned(h, raw);
        signed = h;
      },
    }));
  } catch (error) {
    if (error instanceof PreflightError) {
      await release();
      return { kind: 'refused', from, error: error.message, code: error.reason === 'gas_limit_exceeds_block_cap' ? 'gas_cap' : 'would_revert' };
    }
    if (error instanceof BroadcastRejectedError) {
      await release();
      return { kind: 'refused', from, error: error.message, code: 'broadcast_rejected' };
    }
    if (!signed) {
      // Failed before anything was signed (RPC down during estimation, say): nothing can have moved.
      await release();
      throw error;
    }
    // Signed and stored, fate of the broadcast unknown: the chain decides (fail closed below).
    hash = signed;
  }

  const receipt = await verifyTransaction(client, hash, config.receiptTimeoutMs, mined);
  // The node may have dropped it: the wallet's next send re-reads its nonce rather than leave a gap.
  if (receipt.receiptStatus === 'not_found' || receipt.receiptStatus === 'timeout') services.nonces.resync(client, account.address);
  const spend = spendOutcome(receipt.receiptStatus);
  // After the broadcast nothing may throw: a caller told "failed" would release its idempotency key and a retry would
  // send again. A reservation the store could not settle stays reserved, so the day's cap still counts it (fail closed).
  if (reservationId && spend) {
    await settleSpend(store, reservationId, spend).catch((error: unknown) =>
      console.error(`[flowgate] spend reservation ${reservationId} of sent transaction ${hash} stays reserved: ${(error as Error).message}`),
    );
  }
  return { kind: 'sent', from, hash, receipt };
}
