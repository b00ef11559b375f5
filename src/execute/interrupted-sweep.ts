import type { Services } from '../services.ts';
import { sharedNow } from '../store/clock.ts';
import { periodicSweep } from '../store/periodic-sweep.ts';
import { longestSendMs } from '../onchain/guarded-send.ts';
import { resolveFromChain } from './recovery.ts';

/**
 * Direct executions no request will finish: `pending` ones whose process died
 * mid-request (older than any live request can be), and `unconfirmed` ones
 * (the chain could not be read conclusively, or the store failed after the
 * broadcast). Without this sweep only a retry with the same idempotency key
 * finished them, so a caller without one polled a `pending` execution for
 * ever and its value stayed counted against the day's cap. Each is resolved
 * from the chain (recovery.ts resolveFromChain), its stored bytes sent again
 * while it may still be mined.
 */

/** How often unfinished direct executions are looked for (one indexed read when there are none). */
export const INTERRUPTED_SWEEP_MS = 15_000;
/** At most this many asked about per sweep; the next sweep goes on after the last one seen, so none is starved. */
const PER_SWEEP = 50;
/** How long one sweep waits for a receipt the chain does not have yet. */
const RECEIPT_WAIT_MS = 1_000;

type Cursor = { createdAt: string; id: string } | undefined;
/** What one process's sweeps carry from one to the next. */
type SweepState = { at: Cursor; loggedAt: Map<number, number> };
const LOG_AGAIN_MS = 10 * 60_000;

async function sweep(services: Services, isOpen: () => boolean, state: SweepState): Promise<void> {
  const staleBefore = new Date(sharedNow() - longestSendMs(services.config.receiptTimeoutMs)).toISOString();
  const after = state.at;
  const rows = await services.store
    .selectFrom('direct_executions')
    .selectAll()
    .where('status', 'in', ['pending', 'unconfirmed'])
    .where('created_at', '<', staleBefore)
    .$if(after !== undefined, (q) =>
      q.where((eb) => eb.or([eb('created_at', '>', after!.createdAt), eb.and([eb('created_at', '=', after!.createdAt), eb('id', '>', after!.id)])])),
    )
    .orderBy('created_at')
    .orderBy('id')
    .limit(PER_SWEEP)
    .execute();
  const last = rows.at(-1);
  state.at = rows.length === PER_SWEEP && last ? { createdAt: last.created_at, id: last.id } : undefined;
  const unreachable = new Map<number, string>();
  for (const row of rows) {
    if (!isOpen()) return;
    if (unreachable.has(row.chain_id)) continue;
    await resolveFromChain(services, row, { waitMs: RECEIPT_WAIT_MS, resend: true }).catch((error: unknown) =>
      unreachable.set(row.chain_id, error instanceof Error ? error.message : String(error)),
    );
  }
  for (const [chainId, why] of unreachable) {
    // Once per chain every LOG_AGAIN_MS: a chain gone from the configuration would otherwise log at every sweep.
    if ((state.loggedAt.get(chainId) ?? -Infinity) + LOG_AGAIN_MS > Date.now()) continue;
    state.loggedAt.set(chainId, Date.now());
    console.error(`[flowgate] unfinished direct executions on chain ${chainId} wait until it can be read: ${why}`);
  }
}

/** Sweeps now and every INTERRUPTED_SWEEP_MS until closed. */
export function finishInterruptedExecutions(services: Services, everyMs = INTERRUPTED_SWEEP_MS): { close(): Promise<void> } {
  const state: SweepState = { at: undefined, loggedAt: new Map() };
  return periodicSweep((isOpen) => sweep(services, isOpen, state), everyMs, 'looking for unfinished direct executions failed');
}
