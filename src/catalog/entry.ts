import { z } from 'zod';

/**
 * One file of workflows-catalog/: a listed workflow as data. The workflow
 * itself is an ordinary graph of registry actions; the rest is what the
 * listing promises a caller (price, input schema, documented result fields).
 */

/** Decimal USD, never a float: "0.05", "3", "0.10". */
export const decimalPrice = z
  .string()
  .regex(/^(0|[1-9]\d{0,8})(\.\d{1,6})?$/, 'must be a decimal string such as "0.05" (at most 6 decimal places)')
  .refine((v) => /[1-9]/.test(v), 'must be greater than 0 (omit the price, or use null, for a free workflow)');

export const listingSlug = z
  .string()
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'must be lowercase letters, digits and single hyphens')
  .max(80);

/** A JSON Schema object describing the call body; checked again by Ajv when compiled. */
export const inputSchemaSchema = z.looseObject({ type: z.literal('object') });

export const catalogEntrySchema = z
  .object({
    slug: listingSlug,
    title: z.string().min(1).max(120),
    description: z.string().min(1).max(2000),
    type: z.enum(['read', 'write']),
    chainId: z.number().int().positive().nullable(),
    price: decimalPrice.nullable(),
    protocols: z.array(z.string()).default([]),
    inputSchema: inputSchemaSchema,
    /** Documented result fields: name → human type description. */
    outputFields: z.record(z.string(), z.string()),
    /** Read workflows: output.result is `path` inside the data of node `nodeId` once the run finishes ('' = the whole data). */
    result: z.object({ nodeId: z.string(), path: z.string() }).optional(),
    /** Free text for operators (contract interfaces and the like); not part of the listing. */
    notes: z.string().optional(),
    workflow: z.object({ nodes: z.array(z.unknown()), edges: z.array(z.unknown()) }),
  })
  .refine((entry) => entry.type === 'read' || entry.price === null, { path: ['price'], message: 'a write listing returns calldata and cannot be priced' });

export type CatalogEntry = z.infer<typeof catalogEntrySchema>;
