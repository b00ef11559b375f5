import type { EgressAllowList } from '../net/egress-policy.ts';
import type { EgressSlot } from '../net/egress-slots.ts';

/** What every provider call needs besides its credentials: the egress allow list, cancellation and the time budget. */
export interface SendOptions {
  allowList: EgressAllowList;
  signal?: AbortSignal;
  /** Total time for all attempts (default DELIVERY_DEFAULTS.budgetMs). */
  budgetMs?: number;
  /** Sent on a tenant's behalf: counted against its organization's and the process's open requests. */
  slot?: EgressSlot;
}
