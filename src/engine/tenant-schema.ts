import { Ajv, type ErrorObject, type FuncKeywordDefinition, type Options, type ValidateFunction } from 'ajv';
import { RE2JS } from 're2js';
import { ServiceError } from '../errors.ts';

/**
 * JSON Schema written by organizations: a workflow's `webhookSchema` (checked
 * on each webhook call, webhook-schema.ts) and a listing's `inputSchema` (catalog/input.ts,
 * checked on each call by anyone, anonymous callers included). What keeps one
 * such document from stalling the process or filling its memory is shared by
 * both and lives here:
 *
 * - `pattern` and `patternProperties` run on RE2 (the re2js port), whose time is
 *   linear in the text: no input backtracks. A pattern RE2 cannot run
 *   (backreferences, lookaround) or one that compiles to more than
 *   MAX_PATTERN_INSTRUCTIONS is refused when the document is compiled, and one
 *   compile spends at most MAX_SCHEMA_PATTERN_INSTRUCTIONS in all.
 * - RE2's worst case is instructions × characters, so one validation spends at
 *   most PATTERN_WORK_PER_VALIDATION of that; past it the call is refused
 *   (PatternBudgetError), naming the pattern.
 * - RE2 caches a DFA per pattern; each validation drops the ones it built (forgetDfa).
 * - Each document compiles in an Ajv of its own (so one organization's `$id`
 *   never meets another's), and validators are kept in a bounded LRU
 *   (ValidatorCache): dropping an entry drops its Ajv, and nothing else holds it.
 */

/** Most RE2 instructions one pattern may compile to (`^0x[0-9a-fA-F]{40}$` is 46, `^.{0,1000}$` about 2000). */
export const MAX_PATTERN_INSTRUCTIONS = 4_000;
/** Most RE2 instructions all patterns of one document may compile to: bounds the CPU one publish or save spends compiling. */
export const MAX_SCHEMA_PATTERN_INSTRUCTIONS = 20_000;
/**
 * Pattern work (instructions × characters tested) one validation may do: about a tenth of a
 * second at RE2's worst (50–75 ns a unit while it builds DFA states for hostile text), and
 * enough for `^0x[0-9a-fA-F]{40}$` to check 43,000 characters.
 */
export const PATTERN_WORK_PER_VALIDATION = 2_000_000;

const clip = (text: string) => (text.length > 80 ? `${text.slice(0, 77)}...` : text);

/** A pattern that cannot be used: RE2 refuses it, or it is too large. */
export class PatternError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(`pattern ${JSON.stringify(clip(pattern))} ${reason}`);
  }
}

/** One validation would test more text against a pattern than PATTERN_WORK_PER_VALIDATION allows. */
export class PatternBudgetError extends Error {
  constructor(
    readonly pattern: string,
    /** Characters of text this pattern may check in one validation. */
    readonly maxCharacters: number,
  ) {
    super(
      `the text checked against pattern ${JSON.stringify(clip(pattern))} is too long to check in one request (at most ${maxCharacters} characters in all for this pattern); send shorter values`,
    );
  }
}

/**
 * An upper estimate of the RE2 instructions a pattern compiles to, read from its
 * text without compiling it: compiling is what costs, and a 12-character
 * `[a-z]{1000}` is already a thousand instructions (nested counts multiply).
 * Each atom is 1; a group is its contents plus 2; `x{n,m}` is about m copies of x.
 */
export function estimatedInstructions(pattern: string): number {
  const groups: number[] = [0];
  let last = 0; // the size of what a quantifier here would repeat
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '(') {
      groups.push(0);
      last = 0;
    } else if (ch === ')') {
      const inner = (groups.length > 1 ? groups.pop()! : 0) + 2;
      groups[groups.length - 1] += inner;
      last = inner;
    } else if (ch === '{' && /^\{\d+(,\d*)?\}/.test(pattern.slice(i, i + 24))) {
      const [, low, high] = /^\{(\d+)(?:,(\d*))?\}/.exec(pattern.slice(i, i + 24))!;
      const count = Math.max(1, Number(low) + (high === '' ? 1 : 0), high ? Number(high) : 0);
      groups[groups.length - 1] += Math.max(last, 1) * (count - 1) + count;
      last = Math.max(last, 1) * count + count;
      i = pattern.indexOf('}', i);
    } else if (ch === '*' || ch === '+' || ch === '?' || ch === '|') {
      groups[groups.length - 1] += 1;
      last += 1;
    } else {
      if (ch === '\\') i++;
      else if (ch === '[') {
        // A class is one instruction, whatever it holds: skip to its closing bracket.
        let j = i + 1;
        if (pattern[j] === '^') j++;
        if (pattern[j] === ']') j++;
        for (; j < pattern.length && pattern[j] !== ']'; j++) if (pattern[j] === '\\') j++;
        i = j;
      }
      groups[groups.length - 1] += 1;
      last = 1;
    }
  }
  return groups.reduce((a, b) => a + b, 0);
}

// The state of the one compile or validation running now (both are synchronous).
let compileBudget = MAX_SCHEMA_PATTERN_INSTRUCTIONS;
let compiledHere = new Map<string, { test(text: string): boolean }>();
let workLeft = PATTERN_WORK_PER_VALIDATION;
const touched = new Set<RE2JS>();

/**
 * RE2 keeps a lazily built DFA of up to 8 MB per pattern between matches. A cached
 * validator's patterns would keep theirs for as long as it is cached, so each
 * validation drops the DFAs it built (rebuilding the few states a usual call needs
 * is cheap). `lazyDFA` is re2js's own field (2.10.0, pinned; a test checks it is there).
 */
export function forgetDfa(re: RE2JS): void {
  const inner = re.re2Input as unknown as { lazyDFA?: unknown };
  if (inner && 'lazyDFA' in inner) inner.lazyDFA = null;
  re.reset();
}

function compilePattern(pattern: string): { test(text: string): boolean } {
  const seen = compiledHere.get(pattern);
  if (seen) return seen;
  const estimate = estimatedInstructions(pattern);
  if (estimate > 4 * MAX_PATTERN_INSTRUCTIONS) {
    throw new PatternError(
      pattern,
      `is too large: about ${estimate} RE2 instructions, more than ${MAX_PATTERN_INSTRUCTIONS} (large counts such as {1000} cost the most)`,
    );
  }
  compileBudget -= Math.min(estimate, MAX_PATTERN_INSTRUCTIONS);
  if (compileBudget < 0) {
    throw new PatternError(pattern, `is one too many: the document's patterns compile to more than ${MAX_SCHEMA_PATTERN_INSTRUCTIONS} RE2 instructions in all`);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new PatternError(
      pattern,
      `cannot be used: ${detail} (patterns run on RE2, which needs time linear in the text, so backreferences and lookaround are not supported)`,
    );
  }
  const size = re.programSize();
  if (size > MAX_PATTERN_INSTRUCTIONS) {
    throw new PatternError(
      pattern,
      `is too large: ${size} RE2 instructions, more than ${MAX_PATTERN_INSTRUCTIONS} (large counts such as {1000} cost the most)`,
    );
  }
  const compiled = {
    test(text: string): boolean {
      workLeft -= size * (text.length + 1);
      if (workLeft < 0) throw new PatternBudgetError(pattern, Math.floor(PATTERN_WORK_PER_VALIDATION / size));
      touched.add(re);
      return re.test(text);
    },
    // Ajv keeps one compiled pattern per toString() in a validator.
    toString: () => pattern,
  };
  compiledHere.set(pattern, compiled);
  return compiled;
}

type RegExpEngine = NonNullable<NonNullable<Options['code']>['regExp']>;

/** Ajv's `code.regExp`: ignores the `u` flag, RE2 reads Unicode always. */
const linearRegExp: RegExpEngine = Object.assign((pattern: string) => compilePattern(pattern), {
  code: 'linearRegExp /* src/engine/tenant-schema.ts; not for standalone code */',
});

/** Where a pattern sits in a document (`properties.code.pattern`), for messages; undefined when not found. */
export function patternPath(schema: unknown, pattern: string, path = '', depth = 0): string | undefined {
  if (typeof schema !== 'object' || schema === null || depth > 64) return undefined;
  const join = (key: string) => (path ? `${path}.${key}` : key);
  if (!Array.isArray(schema)) {
    const record = schema as Record<string, unknown>;
    if (record.pattern === pattern) return join('pattern');
    const props = record.patternProperties;
    if (typeof props === 'object' && props !== null && Object.hasOwn(props, pattern)) return join(`patternProperties[${JSON.stringify(pattern)}]`);
  }
  for (const [key, value] of Object.entries(schema)) {
    const found = patternPath(value, pattern, Array.isArray(schema) ? `${path}[${key}]` : join(key), depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * Most subschemas a document may stand for once its `$ref`s are followed. Validation follows them on
 * every call, so a 1.7 KB document whose level n refers to level n-1 twice (`allOf: [{$ref}, {$ref}]`)
 * made each call do 2^22 checks, and a few levels more would hold the process for minutes. A document
 * without such doubling stays far below this: 32 KB of schema is about 2,000 subschemas.
 */
export const MAX_EXPANDED_SUBSCHEMAS = 20_000;

/** The subschema a local `$ref` points at (`#`, `#/$defs/x`); undefined when it is not a local JSON pointer. */
function localTarget(root: unknown, ref: string): unknown {
  if (ref !== '#' && !ref.startsWith('#/')) return undefined;
  let at: unknown = root;
  for (const raw of ref
    .slice(2)
    .split('/')
    .filter((part, i) => part !== '' || i > 0)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/**
 * Counts the subschemas `schema` stands for with its `$ref`s followed, stopping once past `limit`, and
 * its weight: every node (scalars too: an enum of 3,000 numbers is 3,000 comparisons per value) under
 * the same rule. A `$ref` already being followed (a recursive schema) counts once: its cost then grows
 * with the data, which MAX_VALIDATION_WORK bounds. A `$ref` that is not a local pointer is counted as
 * the whole document.
 */
function expandedSubschemas(root: unknown, limit: number): { subschemas: number; weight: number } {
  let subschemas = 0;
  let weight = 0;
  const following = new Set<string>();
  const walk = (node: unknown, depth: number): void => {
    weight++;
    if (subschemas > limit || typeof node !== 'object' || node === null || depth > 256) return;
    subschemas++;
    if (!Array.isArray(node)) {
      const ref = (node as Record<string, unknown>).$ref;
      if (typeof ref === 'string' && !following.has(ref)) {
        following.add(ref);
        walk(localTarget(root, ref) ?? root, depth + 1);
        following.delete(ref);
      }
    }
    for (const value of Object.values(node)) walk(value, depth + 1);
  };
  walk(root, 0);
  return { subschemas, weight };
}

/** A JSON value as text that two values share exactly when JSON Schema calls them equal (object keys in order). */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * `uniqueItems` in time linear in the array: Ajv's own compares every pair of items that are not all of
 * one scalar type (a 20,000-object array held the process for 6 s, a 1 MB body for minutes). Each item
 * becomes its canonical text once, and a set finds the first repeat. Same error as Ajv's.
 */
const linearUniqueItems: FuncKeywordDefinition = {
  keyword: 'uniqueItems',
  type: 'array',
  schemaType: 'boolean',
  errors: true,
  validate: function unique(wanted: boolean, data: unknown[]) {
    const self = unique as { errors?: Partial<ErrorObject>[] };
    self.errors = [];
    if (!wanted) return true;
    const seen = new Map<string, number>();
    for (let i = 0; i < data.length; i++) {
      const text = canonicalJson(data[i]);
      const j = seen.get(text);
      if (j !== undefined) {
        self.errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, params: { i, j } }];
        return false;
      }
      seen.set(text, i);
    }
    return true;
  },
};

// Only validates documents against the meta-schema: it keeps none of them.
let metaAjv: Ajv | undefined;

/**
 * Checks `schema` against the JSON Schema meta-schema and compiles it in an Ajv
 * of its own with linear-time patterns. Throws an Error saying what is wrong
 * (for a pattern, where it is).
 */
export function compileSchema(schema: object, options: Options = {}, name = 'schema'): ValidateFunction {
  const meta = (metaAjv ??= new Ajv({ allErrors: true, strict: false }));
  if (!meta.validateSchema(schema)) throw new Error(meta.errorsText(meta.errors, { dataVar: name }));
  const { subschemas, weight } = expandedSubschemas(schema, MAX_EXPANDED_SUBSCHEMAS);
  if (subschemas > MAX_EXPANDED_SUBSCHEMAS) {
    throw new Error(
      `${name} stands for more than ${MAX_EXPANDED_SUBSCHEMAS} subschemas once its $refs are followed (a $ref used twice at each of several levels doubles the work of every check); define each level once`,
    );
  }
  compileBudget = MAX_SCHEMA_PATTERN_INSTRUCTIONS;
  compiledHere = new Map();
  try {
    const ajv = new Ajv({ ...options, validateSchema: false, addUsedSchema: false, code: { ...options.code, regExp: linearRegExp } });
    ajv.removeKeyword('uniqueItems').addKeyword(linearUniqueItems);
    const validate = ajv.compile(schema);
    weights.set(validate, weight);
    return validate;
  } catch (error) {
    if (error instanceof PatternError) {
      const at = patternPath(schema, error.pattern);
      throw new Error(at ? `${at}: ${error.message}` : error.message);
    }
    throw error;
  } finally {
    compiledHere = new Map();
  }
}

/**
 * Most issues a refused body is told about. Validation reports every error (allErrors), and a body of
 * 60,000 wrong items made 60,000 issues, each of a listing's naming every allowed value: gigabytes of
 * message and a 500 where a 400 was due.
 */
const MAX_REPORTED_ISSUES = 20;

/**
 * The errors a refusal names (at most MAX_REPORTED_ISSUES), and what to add to its message about the rest.
 * A failed anyOf or oneOf is named once, not with the failure of each of its branches (a thousand of
 * them for an anyOf of a thousand constants).
 */
export function reportedErrors(errors: ErrorObject[] | null | undefined): { shown: ErrorObject[]; more: string } {
  // Failed combinators by the instance path they checked; a branch's error sits at that path or below it.
  const combinators = new Map<string, string[]>();
  for (const e of errors ?? []) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') combinators.set(e.instancePath, [...(combinators.get(e.instancePath) ?? []), `${e.schemaPath}/`]);
  }
  const inBranch = (e: ErrorObject) => {
    for (let path = e.instancePath; ; path = path.slice(0, path.lastIndexOf('/'))) {
      if (combinators.get(path)?.some((prefix) => e.schemaPath.startsWith(prefix))) return true;
      if (path === '') return false;
    }
  };
  const all = combinators.size === 0 ? (errors ?? []) : (errors ?? []).filter((e) => !inBranch(e));
  const rest = all.length - MAX_REPORTED_ISSUES;
  return { shown: all.slice(0, MAX_REPORTED_ISSUES), more: rest > 0 ? ` (and ${rest} more)` : '' };
}

/** Each compiled validator's schema weight (expandedSubschemas). */
const weights = new WeakMap<ValidateFunction, number>();

/**
 * The work one validation may do: schema weight × JSON values in the body. Each value meets at most
 * every node of the schema, so this bounds what the product of the two costs: before, an `anyOf` of
 * 1,000 constants (18 KB) against a 40 KB body of 20,000 numbers took 22 s and 3.8 GB collecting
 * errors, and a 1 MB body would have ended the process. About a tenth of a second at its worst.
 */
const MAX_VALIDATION_WORK = 10_000_000;

/** Up to this work a refused body is told every issue, in a second pass that collects them all; past it, the first. */
const ALL_ERRORS_WORK = 200_000;

/** A body with more JSON values than its schema may check in one request (MAX_VALIDATION_WORK). */
class ValidationWorkError extends Error {
  constructor(
    readonly weight: number,
    readonly maxValues: number,
  ) {
    super(
      `the body holds more than ${maxValues} JSON values (a property name is one too, and a string one per ${CHARACTERS_PER_VALUE} characters), the most this schema (${weight} nodes once its $refs are followed) checks in one request; send fewer items per request`,
    );
  }
}

/** Characters of a string (a value or a property name) that count as one more value: a length check reads them all. */
const CHARACTERS_PER_VALUE = 100;

/**
 * JSON values in `data` (every object, array, scalar and property name; a long string counts once per
 * CHARACTERS_PER_VALUE characters too), counting stops once past `limit`.
 */
function countValues(data: unknown, limit: number): number {
  const ofText = (text: string) => 1 + Math.floor(text.length / CHARACTERS_PER_VALUE);
  let count = 0;
  const stack: unknown[] = [data];
  while (stack.length > 0 && count <= limit) {
    const value = stack.pop();
    if (typeof value === 'string') count += ofText(value);
    else count++;
    if (value === null || typeof value !== 'object') continue;
    if (!Array.isArray(value)) for (const key of Object.keys(value)) count += ofText(key);
    for (const child of Object.values(value)) stack.push(child);
  }
  return count;
}

/**
 * A tenant's schema compiled twice over: `first` stops at the first error (what every call runs; its
 * errors are bounded by the schema), `all` collects every error, compiled on first need, for a refused
 * body small enough to be told every issue.
 */
export interface TenantValidator {
  first: ValidateFunction;
  all: () => ValidateFunction;
}

/** compileSchema with `options.allErrors` honoured by a second pass only (TenantValidator). */
export function compileTenantSchema(schema: object, options: Options, name: string): TenantValidator {
  const first = compileSchema(schema, { ...options, allErrors: false }, name);
  let all: ValidateFunction | undefined;
  return { first, all: () => (all ??= options.allErrors ? compileSchema(schema, options, name) : first) };
}

/**
 * Checks `data` within MAX_VALIDATION_WORK and PATTERN_WORK_PER_VALIDATION; a body past either is refused
 * with 400 invalid_input, its message opened by `refusal.prefix` (what was checked against what), a
 * pattern located in `refusal.schema()`. Answers the errors a refusal of the body names: every one when
 * the work is small, else the first.
 */
export function checkWithinBudget(
  validator: TenantValidator,
  data: unknown,
  refusal: { prefix: string; schema: () => unknown },
): { valid: true } | { valid: false; errors: ErrorObject[] } {
  try {
    return runWithinBudget(validator, data);
  } catch (error) {
    if (error instanceof ValidationWorkError) {
      throw new ServiceError(400, 'invalid_input', `${refusal.prefix}: ${error.message}.`, {
        issues: [{ path: '(body)', message: error.message, code: 'too_large' }],
        limit: error.maxValues,
      });
    }
    if (!(error instanceof PatternBudgetError)) throw error;
    const at = patternPath(refusal.schema(), error.pattern);
    throw new ServiceError(400, 'invalid_input', `${refusal.prefix}: ${error.message}.`, {
      issues: [{ path: '(body)', message: error.message, code: 'pattern', ...(at ? { schemaPath: at } : {}) }],
    });
  }
}

function runWithinBudget(validator: TenantValidator, data: unknown): { valid: true } | { valid: false; errors: ErrorObject[] } {
  const weight = weights.get(validator.first) ?? 1;
  const maxValues = Math.floor(MAX_VALIDATION_WORK / weight);
  const values = countValues(data, maxValues);
  if (values > maxValues) throw new ValidationWorkError(weight, maxValues);
  if (validateWithinBudget(validator.first, data)) return { valid: true };
  const firstErrors = validator.first.errors ?? [];
  if (weight * values > ALL_ERRORS_WORK) return { valid: false, errors: firstErrors };
  const all = validator.all();
  validateWithinBudget(all, data);
  return { valid: false, errors: all.errors?.length ? all.errors : firstErrors };
}

/** Runs a validator compiled by compileSchema within PATTERN_WORK_PER_VALIDATION; throws PatternBudgetError past it. */
function validateWithinBudget(validate: ValidateFunction, data: unknown): boolean {
  workLeft = PATTERN_WORK_PER_VALIDATION;
  try {
    return validate(data);
  } finally {
    workLeft = PATTERN_WORK_PER_VALIDATION;
    for (const re of touched) forgetDfa(re);
    touched.clear();
  }
}

/**
 * Compiled validators by document text, least recently used first out: at most
 * `maxEntries` of them and `maxChars` of document text in all (a validator's
 * memory grows with its document).
 */
export class ValidatorCache<V = TenantValidator> {
  readonly #entries = new Map<string, V>();
  #chars = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxChars: number,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  get(key: string, build: () => V): V {
    const hit = this.#entries.get(key);
    if (hit) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit;
    }
    const validate = build();
    this.#entries.set(key, validate);
    this.#chars += key.length;
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.maxEntries && this.#chars <= this.maxChars) break;
      if (oldest === key) break; // the newest always stays
      this.#entries.delete(oldest);
      this.#chars -= oldest.length;
    }
    return validate;
  }
}
