import type { ErrorObject, Options } from 'ajv';
import { ServiceError } from '../errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from '../json-depth.ts';
import { checkWithinBudget, compileSchema, compileTenantSchema, reportedErrors, ValidatorCache, type TenantValidator } from '../engine/tenant-schema.ts';

/**
 * A listing's input schema is JSON Schema (what the listing, OpenAPI and the
 * per-workflow MCP tool publish), so calls are checked against exactly that
 * document. Defaults declared in the schema are filled in. Patterns run on RE2
 * within a budget, and each schema compiles in an Ajv of its own
 * (engine/webhook-schema.ts says why).
 */

/**
 * `format: email` and friends: keep the check without pulling ajv-formats. Formats run on
 * JavaScript's RegExp, so this one must not backtrack: no part may match a dot that the next
 * part could match too (`[^\s@]+\.[^\s@]+` was quadratic on "a@" followed by many dots).
 */
export const EMAIL_FORMAT = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

const options: Options = { allErrors: true, strict: false, useDefaults: true, coerceTypes: false, formats: { email: EMAIL_FORMAT } };

/** Validators of the schemas calls were checked against lately, by schema text. */
const cache = new ValidatorCache(500, 4 * 1024 * 1024);

/** Test-only view of the cache. */
export const inputValidatorCount = () => cache.size;

export function compileInputSchema(schema: Record<string, unknown>): TenantValidator {
  return cache.get(JSON.stringify(schema), () => compileTenantSchema(schema, options, 'inputSchema'));
}

function fieldOf(e: ErrorObject): string {
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const extra = e.params as { missingProperty?: string; additionalProperty?: string };
  const name = extra.missingProperty ?? extra.additionalProperty;
  return [base, name].filter(Boolean).join('.') || '(body)';
}

/** Allowed values an enum refusal names; a longer enum is named in the inputSchema sent with it. */
const MAX_LISTED_VALUES = 10;

function messageOf(e: ErrorObject): string {
  const params = e.params as { additionalProperty?: string; allowedValues?: unknown[] };
  if (e.keyword === 'additionalProperties') return 'is not accepted by this workflow (no other properties allowed)';
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'enum') {
    const allowed = params.allowedValues ?? [];
    const listed = allowed.slice(0, MAX_LISTED_VALUES).map((v) => JSON.stringify(v));
    return `must be one of ${listed.join(', ')}${allowed.length > listed.length ? `, … (${allowed.length} values; see the inputSchema)` : ''}`;
  }
  return e.message ?? 'is invalid';
}

/** Validates (and fills defaults into a copy of) a call body; 400 naming every bad field otherwise. */
export function validateCallInput(slug: string, schema: Record<string, unknown>, body: Record<string, unknown>): Record<string, unknown> {
  // Copying and validating both recurse: bound the depth first (bodies parsed at the edge already are; this guards every other caller).
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    throw new ServiceError(400, 'invalid_input', `Invalid input for ${slug}: ${tooDeepMessage('the body')}`, { limit: MAX_JSON_DEPTH });
  }
  const copy = structuredClone(body);
  let validator: TenantValidator;
  try {
    validator = compileInputSchema(schema);
  } catch (error) {
    // Published before a rule that now refuses it (a lookahead pattern, say): the caller cannot fix that.
    throw new ServiceError(
      409,
      'listing_schema_unusable',
      `The inputSchema of ${slug} can no longer be used: ${(error as Error).message}. Its publisher must publish it again with a usable schema; nothing ran.`,
      { field: 'inputSchema' },
    );
  }
  const checked = checkWithinBudget(validator, copy, { prefix: `Invalid input for ${slug}`, schema: () => schema });
  if (checked.valid) return copy;
  const { shown, more } = reportedErrors(checked.errors);
  const issues = shown.map((e) => ({ path: fieldOf(e), message: messageOf(e), code: e.keyword }));
  const summary = issues.map((i) => `${i.path} ${i.message}`).join('; ') + more;
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
  try {
    // A throwaway compile: a publish leaves nothing cached (calls compile their own on first use).
    compileSchema(schema, options, 'inputSchema');
  } catch (error) {
    throw invalid((error as Error).message);
  }
}
