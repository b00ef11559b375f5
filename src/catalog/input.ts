import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ServiceError } from '../errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from '../json-depth.ts';

/**
 * A listing's input schema is JSON Schema (what the listing, OpenAPI and the
 * per-workflow MCP tool publish), so calls are checked against exactly that
 * document. Defaults declared in the schema are filled in.
 */

const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: false });
// `format: email` and friends: keep the check without pulling ajv-formats.
ajv.addFormat('email', /^[^\s@]+@[^\s@]+\.[^\s@]+$/);

const cache = new Map<string, ValidateFunction>();

export function compileInputSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = cache.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    cache.set(key, validate);
  }
  return validate;
}

function fieldOf(e: ErrorObject): string {
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const extra = e.params as { missingProperty?: string; additionalProperty?: string };
  const name = extra.missingProperty ?? extra.additionalProperty;
  return [base, name].filter(Boolean).join('.') || '(body)';
}

function messageOf(e: ErrorObject): string {
  const params = e.params as { additionalProperty?: string; allowedValues?: unknown[] };
  if (e.keyword === 'additionalProperties') return 'is not accepted by this workflow (no other properties allowed)';
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'enum') return `must be one of ${params.allowedValues?.map((v) => JSON.stringify(v)).join(', ')}`;
  return e.message ?? 'is invalid';
}

/** Validates (and fills defaults into a copy of) a call body; 400 naming every bad field otherwise. */
export function validateCallInput(slug: string, schema: Record<string, unknown>, body: Record<string, unknown>): Record<string, unknown> {
  // Copying and validating both recurse: bound the depth first (bodies parsed at the edge already are; this guards every other caller).
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    throw new ServiceError(400, 'invalid_input', `Invalid input for ${slug}: ${tooDeepMessage('the body')}`, { limit: MAX_JSON_DEPTH });
  }
  const copy = structuredClone(body);
  const validate = compileInputSchema(schema);
  if (validate(copy)) return copy;
  const issues = (validate.errors ?? []).map((e) => ({ path: fieldOf(e), message: messageOf(e), code: e.keyword }));
  const summary = issues.map((i) => `${i.path} ${i.message}`).join('; ');
  throw new ServiceError(
    400,
    'invalid_input',
    `Invalid input for ${slug}: ${summary}. The expected body is the listing's inputSchema (GET /api/mcp/workflows/${slug}).`,
    {
      issues,
      inputSchema: schema,
    },
  );
}

/** Upper bound on a published input schema (it is sent with every listing, 402 and tool list). */
export const MAX_INPUT_SCHEMA_BYTES = 32_768;

/**
 * A schema set at publish: must be a JSON Schema Ajv accepts (meta-schema and
 * compile), describing an object body. Refused with 400 naming the problem,
 * so a listing can never hold a schema that makes every call a 500.
 */
export function checkInputSchema(schema: Record<string, unknown>): void {
  const invalid = (detail: string) =>
    new ServiceError(400, 'invalid_input_schema', `inputSchema is not a usable JSON Schema: ${detail}.`, { field: 'inputSchema' });
  if (JSON.stringify(schema).length > MAX_INPUT_SCHEMA_BYTES) throw invalid(`it is larger than ${MAX_INPUT_SCHEMA_BYTES} bytes`);
  if (schema.type !== 'object') throw invalid('the top-level type must be "object" (the call body is a JSON object)');
  if (!ajv.validateSchema(schema)) throw invalid(ajv.errorsText(ajv.errors, { dataVar: 'inputSchema' }));
  try {
    compileInputSchema(schema);
  } catch (error) {
    throw invalid((error as Error).message);
  }
}
