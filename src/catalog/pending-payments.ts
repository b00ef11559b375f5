import type { Services } from '../services.ts';
import { sharedNow } from '../store/clock.ts';
import type { PublicClient } from 'viem';
import type { PaymentsTable } from '../store/schema.ts';
import { abandonGatedRun, releaseGatedRun } from '../engine/gated-runs.ts';
import { resolvePayment, settledButWaiting, unresolvedPayments } from '../payments/records.ts';
import { periodicSweep } from '../store/periodic-sweep.ts';

/**
 * Paid calls whose settlement outcome was not known when they stopped waiting
 * are finished from the chain, so a payer is never charged for a run that
 * never starts, and a run never starts unpaid:
 *  - `settling` payments (sent, unmined when the call answered
 *    `awaiting_payment`), at every sweep;
 *  - `verified` payments left with a run for longer than a settlement can
 *    take (the process stopped between claiming the payment and recording
 *    its outcome; the transaction may have been sent);
 *  - `settled` payments whose run is still waiting (the process stopped
 *    between the two writes): the run is released.
 * What the chain says (src/payments/settlement-outcome.ts): paid, and the run
 * starts; not paid and never payable, and the run ends as an error without
 * running a step; not decided yet, and the next sweep asks again. Each write
 * checks the row is still as read, so instances sharing a database resolve a
 * payment once.
 */

/** How often unresolved payments are looked for (one indexed read when there are none). */
export const PENDING_SWEEP_MS = 5_000;
/** At most this many payments asked about per sweep. */
const PER_SWEEP = 100;
/**
 * Beyond the settlement's own wait (FLOWGATE_PAYMENT_CONFIRMATION_MS), how long a `verified` payment with a run may
 * stay so before it is resolved from the chain: as long again, at most a minute (verification and sending come first).
 */
const verifiedGraceMs = (confirmationMs: number) => Math.min(60_000, confirmationMs);

async function releasePaidRun(services: Services, executionId: string): Promise<void> {
  const run = await services.store.selectFrom('workflow_executions').select('organization_id').where('id', '=', executionId).executeTakeFirst();
  if (run) await releaseGatedRun(services, executionId, run.organization_id);
}

/** Asks the chain about one payment and writes what it says; true when it is resolved (here or by another instance). */
async function resolvePendingPayment(services: Services, chain: PublicClient, row: PaymentsTable): Promise<boolean> {
  const outcome = await services.payments.settlementOutcome(chain, row);
  if (!outcome) return false;
  if (!(await resolvePayment(services.store, row, outcome))) return true;
  if (!row.execution_id) return true;
  if ('settled' in outcome) {
    console.error(`[flowgate] payment for ${row.listing_slug} settled by ${outcome.settled.hash} after its call stopped waiting: its run starts`);
    await releasePaidRun(services, row.execution_id);
  } else {
    console.error(`[flowgate] payment for ${row.listing_slug} not settled (${outcome.failed}): its run is abandoned`);
    await abandonGatedRun(services, row.execution_id, `Payment settlement failed: ${outcome.failed}`);
  }
  return true;
}

/** The gateway's client of the payment chain (it follows an RPC URL set after start); none reachable: asked again next sweep. */
function paymentChain(services: Services): PublicClient | undefined {
  try {
    return services.chainClients.publicClient(services.payments.settings.chainId);
  } catch (error) {
    console.error('[flowgate] unresolved payments wait for the payment chain:', error instanceof Error ? error.message : error);
    return undefined;
  }
}

async function sweep(services: Services, isOpen: () => boolean): Promise<void> {
  const now = sharedNow();
  const { confirmationMs } = services.payments.settings;
  const staleBefore = new Date(now - confirmationMs - verifiedGraceMs(confirmationMs)).toISOString();
  const unresolved = await unresolvedPayments(services.store, staleBefore, PER_SWEEP);
  const chain = unresolved.length > 0 ? paymentChain(services) : undefined;
  if (chain) {
    for (const row of unresolved) {
      if (!isOpen()) return;
      await resolvePendingPayment(services, chain, row).catch((error) =>
        console.error(`[flowgate] payment for ${row.listing_slug} could not be resolved yet:`, error),
      );
    }
  }
  for (const executionId of await settledButWaiting(services.store, new Date(now - verifiedGraceMs(confirmationMs)).toISOString(), PER_SWEEP)) {
    if (!isOpen()) return;
    await releasePaidRun(services, executionId);
  }
}

/** Sweeps now and every PENDING_SWEEP_MS until closed. */
export function resolvePendingPayments(services: Services, everyMs = PENDING_SWEEP_MS): { close(): Promise<void> } {
  return periodicSweep((isOpen) => sweep(services, isOpen), everyMs, 'looking for unresolved payments failed');
}
