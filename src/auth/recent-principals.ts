import type { Principal } from './principal.ts';

/**
 * Principals of recently authenticated keys, by the key's SHA-256 digest
 * (never the key itself), kept for `ttlMs`. Looking a key up costs more than
 * most requests it authenticates; the price is that a key revoked or
 * re-scoped in the database is still honoured for at most `ttlMs` by a
 * process that saw it just before. Unknown keys are never remembered, so a
 * key works the moment it is created and garbage tokens cannot fill the map.
 */
export class RecentPrincipals {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(digest: string, now = Date.now()): Principal | undefined {
    const entry = this.entries.get(digest);
    if (!entry) return undefined;
    if (entry.until > now) return entry.principal;
    this.entries.delete(digest);
    return undefined;
  }

  /** Drops a digest at once (its key was revoked in this process). */
  forget(digest: string): void {
    this.entries.delete(digest);
  }

  remember(digest: string, principal: Principal, now = Date.now()): void {
    if (this.ttlMs <= 0) return;
    // Oldest first: a Map iterates in insertion order.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.delete(digest);
    this.entries.set(digest, { principal, until: now + this.ttlMs });
  }
}
