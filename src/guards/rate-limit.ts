import ipaddr from 'ipaddr.js';
import { RateLimiterPostgres, RateLimiterRes, RateLimiterSQLite, type RateLimiterStoreAbstract } from 'rate-limiter-flexible';
import { RATE_LIMIT_VARIABLES, type Config, type RateLimitName } from '../config.ts';
import { ServiceError } from '../errors.ts';
import { withStatementCache, type OpenedStore, type SqliteHandle } from '../store/db.ts';
import { consumeSliding, resetSliding } from './sliding-window.ts';

/**
 * Request-rate limits from SPEC.md's Limits table. Counters live in the
 * shared database (not process memory), so every gateway process of one
 * deployment enforces the same budget. FLOWGATE_RATE_LIMITS=off lifts these
 * request limits only; spend caps are separate guards and never lifted.
 */

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  /** The window's first refusal (later ones in the same window are not): what a refusal worth recording once is. */
  firstRefusal?: boolean;
}

export interface RateLimiter {
  readonly enabled: boolean;
  consume(name: RateLimitName, key: string): Promise<RateLimitDecision>;
  /** Forgets the counter of `key` (a completed step-up resets its budget). */
  reset(name: RateLimitName, key: string): Promise<void>;
  /** Adds `points` to `key`'s counter without refusing anything now: the cost of work already done (a large answer). */
  charge(name: RateLimitName, key: string, points: number): Promise<void>;
}

/**
 * The key a client address is counted under: an IPv4 address (also written
 * IPv4-mapped, `::ffff:a.b.c.d`) as itself, an IPv6 address as its /64. One
 * subscriber is routinely given a whole /64, so counting single IPv6
 * addresses let a client take a fresh budget with every request.
 */
export function addressBucket(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  let address = ipaddr.parse(ip);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) address = (address as ipaddr.IPv6).toIPv4Address();
  if (address.kind() === 'ipv4') return address.toString();
  return `${(address as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}

const byIp = (name: RateLimitName) => 'byIp' in RATE_LIMIT_VARIABLES[name];
/** Kept as a log of requests rather than a fixed-window counter (src/guards/sliding-window.ts). */
const sliding = (name: RateLimitName) => 'sliding' in RATE_LIMIT_VARIABLES[name];

/**
 * The SQLite client handed to rate-limiter-flexible. It prepared its upsert again for every request and wrapped that
 * one statement in a transaction: 27 µs a request, which every authenticated REST request pays. Statements come from
 * the store's cache, and `transaction` runs the function as it is (a single statement is atomic on its own): 13 µs.
 */
const preparedOnce = (sqlite: SqliteHandle) => ({ ...withStatementCache(sqlite), transaction: <F>(fn: F) => fn });

export function createRateLimiter(config: Config, opened: OpenedStore): RateLimiter {
  const limiters = new Map<RateLimitName, RateLimiterStoreAbstract>();
  const sqliteClient = opened.kind === 'sqlite' ? preparedOnce(opened.sqlite) : undefined;
  const limiterFor = (name: RateLimitName) => {
    let limiter = limiters.get(name);
    if (!limiter) {
      const { limit, windowSeconds } = config.rateLimits[name];
      // The table is migration 003's, on either database (its layout is the one both stores read and write).
      const common = { tableName: 'rate_limits', tableCreated: true, keyPrefix: name, points: limit, duration: windowSeconds };
      limiter =
        opened.kind === 'postgres'
          ? new RateLimiterPostgres({ ...common, storeClient: opened.pool, storeType: 'pool' })
          : new RateLimiterSQLite({ ...common, storeClient: sqliteClient, storeType: 'better-sqlite3' });
      limiters.set(name, limiter);
    }
    return limiter;
  };

  return {
    enabled: config.rateLimitsEnabled,
    async consume(name, key) {
      const { limit } = config.rateLimits[name];
      if (!config.rateLimitsEnabled) return { allowed: true, limit, remaining: limit, resetSeconds: 0 };
      if (sliding(name)) return consumeSliding(opened.store, `${name}:${key}`, limit, config.rateLimits[name].windowSeconds * 1000);
      try {
        const res = await limiterFor(name).consume(byIp(name) ? addressBucket(key) : key);
        return { allowed: true, limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          return {
            allowed: false,
            limit,
            remaining: 0,
            resetSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)),
            firstRefusal: rejection.consumedPoints === limit + 1,
          };
        }
        throw rejection;
      }
    },
    async reset(name, key) {
      if (!config.rateLimitsEnabled) return;
      if (sliding(name)) return resetSliding(opened.store, `${name}:${key}`);
      await limiterFor(name).delete(byIp(name) ? addressBucket(key) : key);
    },
    async charge(name, key, points) {
      if (!config.rateLimitsEnabled || points <= 0) return;
      if (sliding(name)) throw new Error(`${name} is a sliding window: it counts requests, it is not charged`);
      await limiterFor(name).penalty(byIp(name) ? addressBucket(key) : key, points);
    },
  };
}

/**
 * The one 429 every edge renders for a refused decision (REST body and
 * headers; MCP puts the same body in the JSON-RPC error's `data`).
 */
export function rateLimitedError(
  name: RateLimitName,
  decision: RateLimitDecision,
  advice = 'then back off exponentially; keep the same idempotency key on writes',
): ServiceError {
  const { describes } = RATE_LIMIT_VARIABLES[name];
  return new ServiceError(
    429,
    'rate_limited',
    `Rate limit of ${decision.limit} ${describes} reached; retry after ${decision.resetSeconds} s (${advice}).`,
    { limit: decision.limit, retryAfterSeconds: decision.resetSeconds },
    { ...rateLimitHeaders(decision), 'Retry-After': String(decision.resetSeconds) },
  );
}

/** The X-RateLimit-* headers of SPEC's Limits table for a decision. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(decision.resetSeconds),
  };
}
