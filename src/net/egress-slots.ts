/**
 * How many outbound requests made on a tenant's behalf (HTTP Request and
 * webhook steps, chat and e-mail steps, integration tests) are open at once:
 * at most `perOrganization` of one organization and `total` in the process.
 * Each request opens a socket of its own (safe-fetch.ts), and one tenant's For
 * Each runs (50 parallel iterations in each of its 32 run slots) held 1,600 of
 * them open to a slow target; past the process's file descriptors every
 * tenant's steps and RPC calls failed with EMFILE.
 *
 * A request past a cap waits for a slot, bounded by its own timeout or
 * cancellation. It waits for its organization's slot first and only then for
 * one of the process's, so the waiting requests of an organization at its cap
 * hold none of the process's slots; and the per-organization cap is below the
 * process's (config.ts), so one organization never holds them all (several at
 * their caps together can, as with run slots; the process's slots then go in
 * order of arrival).
 */

/** A request gave up while it waited for a slot: which cap it was waiting on. */
export class EgressSlotWaitError extends Error {
  constructor(
    readonly cap: 'organization' | 'process',
    readonly limit: number,
    readonly reason: unknown,
  ) {
    super(`gave up waiting for an outbound connection slot (${cap} cap ${limit})`);
  }
}

/** Counting semaphore whose waiters are served first come, first served, and leave the line when their signal aborts. */
class Semaphore {
  private held = 0;
  private readonly waiting = new Set<() => void>();

  constructor(readonly max: number) {}

  get idle(): boolean {
    return this.held === 0 && this.waiting.size === 0;
  }

  /** Resolves once a slot is held; rejects with the signal's reason if it aborts first (no slot is then held). */
  acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.held < this.max) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.waiting.delete(grant);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.add(grant);
    });
  }

  release(): void {
    const [next] = this.waiting;
    if (!next) {
      this.held--;
      return;
    }
    // The slot passes straight to the next waiter: `held` stays as it is.
    this.waiting.delete(next);
    next();
  }
}

export class EgressSlots {
  private readonly organizations = new Map<string, Semaphore>();
  private readonly process: Semaphore;

  constructor(
    readonly perOrganization: number,
    readonly total: number,
  ) {
    this.process = new Semaphore(total);
  }

  /**
   * Waits for one of `organizationId`'s slots, then one of the process's; the returned function frees both (once).
   * Rejects with EgressSlotWaitError if `signal` aborts while it waits.
   */
  async acquire(organizationId: string, signal: AbortSignal): Promise<() => void> {
    let own = this.organizations.get(organizationId);
    if (!own) this.organizations.set(organizationId, (own = new Semaphore(this.perOrganization)));
    const organization = own;
    try {
      await organization.acquire(signal);
    } catch (reason) {
      this.forgetIdle(organizationId, organization);
      throw new EgressSlotWaitError('organization', this.perOrganization, reason);
    }
    try {
      await this.process.acquire(signal);
    } catch (reason) {
      organization.release();
      this.forgetIdle(organizationId, organization);
      throw new EgressSlotWaitError('process', this.total, reason);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.process.release();
      organization.release();
      this.forgetIdle(organizationId, organization);
    };
  }

  /** An organization with nothing open or waiting leaves the map, so it holds only organizations that are sending. */
  private forgetIdle(organizationId: string, organization: Semaphore): void {
    if (organization.idle && this.organizations.get(organizationId) === organization) this.organizations.delete(organizationId);
  }
}

/** What a request made on a tenant's behalf passes to safeFetch: the process's slots, and whose request it is. */
export interface EgressSlot {
  slots: EgressSlots;
  organizationId: string;
}
