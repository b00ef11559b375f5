import { z } from 'zod';
import { GRAPH_LIMITS } from '../src/engine/graph.ts';

/** Input and output shapes shared by the workflow families. */

export const workflowIdParam = z.string().trim().min(1, 'workflowId is required').max(64);

const graphItem = z.record(z.string(), z.unknown());

export const workflowSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  visibility: z.enum(['private', 'public']),
  nodes: z.array(graphItem),
  edges: z.array(graphItem),
  projectId: z.string().nullable(),
  tagId: z.string().nullable(),
  enabled: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const publicTagRefSchema = z.object({ id: z.string(), name: z.string(), slug: z.string() });

export const invalidFieldSchema = z.object({
  code: z.string(),
  nodeId: z.string().nullable(),
  nodeLabel: z.string().nullable(),
  path: z.string(),
  received: z.unknown().optional(),
  message: z.string(),
  suggestion: z.string().optional(),
});

export const workflowName = z.string().trim().min(1, 'name must not be empty').max(GRAPH_LIMITS.maxLabelLength);
export const workflowDescription = z.string().max(2000).nullable();

/**
 * Page parameters as decimal whole numbers only: REST sends text, MCP sends
 * numbers; hex, exponents, signs and spaces are refused, not coerced.
 */
export const decimalWholeNumber = (field: string, min: number, max: number) =>
  z.union([z.number(), z.string()]).transform((value, ctx) => {
    const text = typeof value === 'number' ? String(value) : value;
    if (!/^\d+$/.test(text) || (typeof value === 'number' && !Number.isSafeInteger(value))) {
      ctx.addIssue({ code: 'custom', message: `${field} must be a decimal whole number between ${min} and ${max}; got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    const number = Number(text);
    if (number < min || number > max) {
      ctx.addIssue({ code: 'custom', message: `${field} must be between ${min} and ${max}; got ${number}` });
      return z.NEVER;
    }
    return number;
  });
