import { z } from 'zod';

/**
 * Input building blocks shared by registry entries. REST query strings arrive
 * as text and MCP arguments as JSON, so these accept both spellings losslessly
 * and refuse anything else.
 */

/** `true`/`false` as a boolean or as the strings "true"/"false" (query strings). */
export const booleanish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');

/** A chain reference: numeric id (number or decimal string) or a name alias such as `base`. */
export const chainRef = z.union([z.number().int().positive(), z.string().trim().min(1, 'expected a chain id or chain name')]);

/**
 * The MCP `idempotency_key` argument. Its bounds (trimmed, 1-255 characters)
 * are the one rule `parseIdempotencyKey` applies to header and argument alike.
 */
export const idempotencyKeyArgument = z.string().optional().describe('Same key on every retry of one intent, a new key per intent');
