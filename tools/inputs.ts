import { z } from 'zod';

/**
 * Input building blocks shared by registry entries. REST query strings arrive
 * as text and MCP arguments as JSON, so these accept both spellings losslessly
 * and refuse anything else.
 */

/** `true`/`false` as a boolean or as the strings "true"/"false" (query strings). */
export const booleanish = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], { error: 'expected true, false, 1 or 0' })
  .transform((v) => v === true || v === 'true' || v === '1');

/** A page size from the query string (or a number over MCP): 1 to `max`, `fallback` when omitted. */
export const pageLimit = (max: number, fallback: number) => {
  const error = `expected a whole number from 1 to ${max}`;
  return z.coerce.number({ error }).int({ error }).min(1, { error }).max(max, { error }).default(fallback);
};

/** A chain reference: numeric id (number or decimal string) or a name alias such as `base`. */
export const chainRef = z.union([z.number().int().positive(), z.string().trim().min(1, 'expected a chain id or chain name')]);

/**
 * The MCP `idempotency_key` argument. Its bounds (trimmed, 1-255 characters)
 * are the one rule `parseIdempotencyKey` applies to header and argument alike.
 */
export const idempotencyKeyArgument = z.string().optional().describe('Same key on every retry of one intent, a new key per intent');
