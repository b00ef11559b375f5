import type { Hex } from 'viem';
import { verifyTransaction } from '../chains/transactions.ts';
import { releaseUnsigned, settleSpend, spendOutcome, staleReservations } from '../guards/spend-cap.ts';
import type { Services } from '../services.ts';
import { longestSendMs } from './guarded-send.ts';
import { sharedNow } from '../store/clock.ts';
import { periodicSweep } from '../store/periodic-sweep.ts';

/**
 * Spend reservations their sender never settled, by direct execution or by a
 * workflow step alike: its process died mid-send, or the receipt could not be
 * read and the run or execution was settled later without them. Held, such a
 * reservation kept its value counted against the day's cap although nothing
 * may have moved. Past the time any live send can take, one no transaction
 * was noted for is released (nothing was signed; a live sender slower than
 * that finds it released before its broadcast and sends nothing), and one
 * whose transaction the chain has mined is spent (success) or released
 * (reverted); one still unmined stays held (fail closed).
 */

/** How often held reservations are looked for (one indexed read when there are none). */
export const STALE_RESERVATION_SWEEP_MS = 30_000;
const PER_SWEEP = 100;
/** How long the sweep waits for a receipt the chain does not have yet. */
const RECEIPT_WAIT_MS = 500;

type Cursor = { createdAt: string; id: string } | undefined;

async function sweep(services: Services, isOpen: () => boolean, cursor: { at: Cursor }): Promise<void> {
  const heldBefore = new Date(sharedNow() - longestSendMs(services.config.receiptTimeoutMs)).toISOString();
  const rows = await staleReservations(services.store, heldBefore, PER_SWEEP, cursor.at);
  // A full page: the next sweep goes on after it, so reservations that stay held (unmined) never starve the others.
  const last = rows.at(-1);
  cursor.at = rows.length === PER_SWEEP && last ? { createdAt: last.created_at, id: last.id } : undefined;
  const unreadable = new Set<number>();
  for (const row of rows) {
    if (!isOpen()) return;
    if (!row.transaction_hash) {
      await releaseUnsigned(services.store, row.id);
      continue;
    }
    if (row.chain_id === null || unreadable.has(row.chain_id)) continue;
    try {
      const receipt = await verifyTransaction(services.chainClients.publicClient(row.chain_id), row.transaction_hash as Hex, RECEIPT_WAIT_MS);
      const outcome = spendOutcome(receipt.receiptStatus);
      if (outcome) await settleSpend(services.store, row.id, outcome);
    } catch {
      unreadable.add(row.chain_id);
    }
  }
}

/** Sweeps now and every STALE_RESERVATION_SWEEP_MS until closed. */
export function settleStaleReservations(services: Services, everyMs = STALE_RESERVATION_SWEEP_MS): { close(): Promise<void> } {
  const cursor: { at: Cursor } = { at: undefined };
  return periodicSweep((isOpen) => sweep(services, isOpen, cursor), everyMs, 'settling held spend reservations failed');
}
