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

/*
 * The compact forms tools/list publishes. A full organization listing must
 * fit an agent's context (README, "Context budget"), so the listing carries
 * what an agent needs to call a tool and read its answer, and
 * tools_documentation {toolName} carries the full schemas.
 *
 * Input: every argument, type, enum, pattern, description and `required`
 * list, minus noise: constraints every JSON value already meets (string
 * property names, `additionalProperties: {}`, `items: {}`, the safe-integer
 * range), `anyOf` of plain types merged into a type list (same values), no
 * length bounds (the gateway still enforces them and answers invalid_input
 * naming the field), and plain `boolean` for flags that REST also takes as
 * "true"/"1" text, and an object nested two properties deep (a workflow
 * node's `data` or `position`) as a plain object: list_action_schemas
 * documents node structure, and its config was a plain object already.
 * Length bounds and those inner objects aside, whatever it admits the
 * gateway accepts.
 *
 * Output: the top-level field names only. MCP clients validate
 * structuredContent against outputSchema, so a looser schema is always safe
 * and a deeper one only costs context.
 */

const SAFE_INTEGER = Number.MAX_SAFE_INTEGER;
const LENGTH_BOUNDS = new Set(['minLength', 'maxLength', 'minItems', 'maxItems']);
/** `booleanish` as zod renders it: a boolean, or one of its spellings as text for query strings. */
const BOOLEANISH_TEXT = JSON.stringify(['true', 'false', '1', '0'].sort());
const isBooleanish = (schema: JsonSchema) =>
  Array.isArray(schema.anyOf) &&
  schema.anyOf.length === 2 &&
  (schema.anyOf as JsonSchema[]).some((b) => b.type === 'boolean' && Object.keys(b).length === 1) &&
  (schema.anyOf as JsonSchema[]).some(
    (b) => b.type === 'string' && Array.isArray(b.enum) && JSON.stringify([...(b.enum as string[])].sort()) === BOOLEANISH_TEXT,
  );

/** Keywords that only constrain values of one JSON type, so branches of different types can share one schema. */
const TYPE_KEYWORDS: Record<string, readonly string[]> = {
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  array: ['items', 'minItems', 'maxItems'],
  object: ['properties', 'required', 'additionalProperties', 'propertyNames'],
  boolean: [],
  null: [],
};

/**
 * `anyOf` of branches with one distinct type each, and only keywords of that
 * type, as one schema with a type list: the same set of values, fewer bytes.
 */
function mergeTypeUnion(schema: JsonSchema): JsonSchema | undefined {
  const branches = schema.anyOf;
  if (!Array.isArray(branches) || 'type' in schema) return undefined;
  const types: string[] = [];
  const merged: JsonSchema = {};
  for (const branch of branches as JsonSchema[]) {
    const type = branch.type;
    if (typeof type !== 'string' || !TYPE_KEYWORDS[type] || types.includes(type)) return undefined;
    if ((type === 'number' && types.includes('integer')) || (type === 'integer' && types.includes('number'))) return undefined;
    for (const [key, value] of Object.entries(branch)) {
      if (key === 'type') continue;
      if (!TYPE_KEYWORDS[type]!.includes(key) || key in merged) return undefined;
      merged[key] = value;
    }
    types.push(type);
  }
  const { anyOf: _anyOf, ...rest } = schema;
  return { ...rest, type: types, ...merged };
}

/** Object arguments nested this many properties deep are published as plain objects (see above). */
const OBJECT_DEPTH = 2;

function compactInput(schema: unknown, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((s) => compactInput(s, depth));
  if (typeof schema !== 'object' || schema === null) return schema;
  let source = schema as JsonSchema;
  if (depth >= OBJECT_DEPTH && source.type === 'object' && source.properties) {
    return { type: 'object', ...(typeof source.description === 'string' ? { description: source.description } : {}) };
  }
  if (isBooleanish(source)) {
    const { anyOf: _anyOf, ...rest } = source;
    return { ...rest, type: 'boolean' };
  }
  if (Array.isArray(source.anyOf)) source = { ...source, anyOf: (source.anyOf as unknown[]).map((s) => compactInput(s, depth)) };
  source = mergeTypeUnion(source) ?? source;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === 'propertyNames' && JSON.stringify(value) === '{"type":"string"}') continue;
    if ((key === 'additionalProperties' || key === 'items') && JSON.stringify(value) === '{}') continue;
    if ((key === 'minimum' && value === -SAFE_INTEGER) || (key === 'maximum' && value === SAFE_INTEGER)) continue;
    if (LENGTH_BOUNDS.has(key) && typeof value === 'number') continue;
    out[key] =
      key === 'properties' || key === '$defs'
        ? Object.fromEntries(Object.entries(value as JsonSchema).map(([name, sub]) => [name, compactInput(sub, depth + 1)]))
        : compactInput(value, depth);
  }
  return out;
}

/** The top-level field names of an object output; `{}` (any) for anything else. */
function compactOutput(schema: JsonSchema): JsonSchema {
  const properties = schema.properties as JsonSchema | undefined;
  if (schema.type !== 'object' || !properties) return {};
  return { type: 'object', properties: Object.fromEntries(Object.keys(properties).map((name) => [name, {}])) };
}

const compactInputCache = new WeakMap<AnyTool, JsonSchema>();
const compactOutputCache = new WeakMap<AnyTool, JsonSchema>();

/** The input schema tools/list publishes (see above). */
export function compactInputJsonSchema(tool: AnyTool): JsonSchema {
  let json = compactInputCache.get(tool);
  if (!json) compactInputCache.set(tool, (json = compactInput(inputJsonSchema(tool)) as JsonSchema));
  return json;
}

/** The output schema tools/list publishes: `{type: 'object', properties: {<top-level field>: {}}}`; a list answered under `resultKey` is `{<resultKey>: {}}`. */
export function compactOutputJsonSchema(tool: AnyTool, resultKey?: string): JsonSchema {
  let json = compactOutputCache.get(tool);
  if (!json) {
    const output = compactOutput(outputJsonSchema(tool));
    json = resultKey ? { type: 'object', properties: { [resultKey]: output } } : { type: 'object', ...output };
    compactOutputCache.set(tool, json);
  }
  return json;
}
