import { z } from 'zod';
import type { AnyTool } from './define.ts';

/**
 * JSON Schema (draft 2020-12) for a tool's input and output, from zod's own
 * converter. `io: 'input'` describes what a caller sends (before transforms).
 * Cached: the registry is immutable for the life of the process.
 */

type JsonSchema = Record<string, unknown>;
const inputCache = new WeakMap<AnyTool, JsonSchema>();
const outputCache = new WeakMap<AnyTool, JsonSchema>();

export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete json.$schema;
  return json;
}

export function inputJsonSchema(tool: AnyTool): JsonSchema {
  let json = inputCache.get(tool);
  if (!json) inputCache.set(tool, (json = toJsonSchema(tool.input, 'input')));
  return json;
}

export function outputJsonSchema(tool: AnyTool): JsonSchema {
  let json = outputCache.get(tool);
  if (!json) outputCache.set(tool, (json = toJsonSchema(tool.output, 'output')));
  return json;
}
