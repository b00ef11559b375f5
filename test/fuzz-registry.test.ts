import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { PostgresAdapter, sql } from 'kysely';
import pg from 'pg';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { registry } from '../tools/index.ts';
import type { AnyTool } from '../tools/define.ts';
import { inputJsonSchema, toJsonSchema } from '../tools/json-schema.ts';
import { actions } from '../src/actions/index.ts';
import { INTEGRATION_TYPES } from '../src/org/integrations.ts';
import { databaseFile } from '../src/store/db.ts';
import { RATE_LIMIT_VARIABLES } from '../src/config.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { connectMcp } from './helpers/mcp.ts';

/**
 * Property-based fuzzing of every registry operation (issue 12, item 7).
 *
 * For each tool, fast-check derives malformed inputs from the tool's own input
 * schema (its JSON Schema from zod): wrong types, missing required fields, huge
 * strings, deep nesting, `__proto__`/`constructor`/`prototype` keys, non-finite
 * and negative numbers, odd unicode, junk bodies. Each goes to the tool's real
 * REST route (path params fuzzed too) and, when exposed, to `/mcp` tools/call
 * (the SDK client for plain JSON, raw JSON-RPC for what the SDK cannot send:
 * `1e999` literals and deep nesting). Asserted per request:
 *   - no HTTP status >= 500, no JSON-RPC -32603, no `internal_error` tool result;
 *   - no stack frame or internal path in the body;
 *   - a refused request (4xx, MCP error) leaves every domain table unchanged.
 *
 * Fixed seed and bounded runs: FUZZ_SEED / FUZZ_RUNS override them (FUZZ_ONLY
 * narrows to some operations); fast-check prints the seed, path and
 * counterexample (the request) on failure.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 1_211_2026);
/** Runs per (operation, transport, kind of fault): every operation meets every kind. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 2);

// ---------------------------------------------------------------- inputs

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = Record<string, any>;

/** Markers replaced in the serialized text: JSON cannot spell these values, but a parser meets them. */
const POS_INF = '\u0001fuzz:+inf';
const NEG_INF = '\u0001fuzz:-inf';
const NAN = '\u0001fuzz:nan';
const DEEP_ARRAY = '\u0001fuzz:deep-array';
const DEEP_OBJECT = '\u0001fuzz:deep-object';
const DEPTH = 3000;
const HUGE = 100_000;

function serialize(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll(JSON.stringify(POS_INF), '1e999')
    .replaceAll(JSON.stringify(NEG_INF), '-1e999')
    .replaceAll(JSON.stringify(NAN), 'NaN')
    .replaceAll(JSON.stringify(DEEP_ARRAY), '['.repeat(DEPTH) + ']'.repeat(DEPTH))
    .replaceAll(JSON.stringify(DEEP_OBJECT), '{"a":'.repeat(DEPTH) + '1' + '}'.repeat(DEPTH));
}
const MARKERS = [POS_INF, NEG_INF, NAN, DEEP_ARRAY, DEEP_OBJECT];
const hasMarker = (text: string) => MARKERS.some((m) => text.includes(JSON.stringify(m)));

/** A plausible value per field name where a pattern makes a generic one useless, so other fields' faults get past it. */
const HINTS: Record<string, Json> = {
  color: '#3b82f6',
  slug: 'fuzz-listing',
  chainId: 8453,
  network: '8453',
  address: '0x000000000000000000000000000000000000dEaD',
  recipientAddress: '0x000000000000000000000000000000000000dEaD',
  contractAddress: '0x000000000000000000000000000000000000dEaD',
  tokenAddress: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  amount: '0.01',
  price: null,
  inputSchema: { type: 'object' },
  expression: '0 * * * *',
  cron: '0 * * * *',
  name: 'fuzz',
};

function plausible(schema: Schema | undefined, name: string, depth = 0): Json {
  if (name in HINTS) return HINTS[name]!;
  if (!schema || depth > 3) return 'fuzz';
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if ('default' in schema && schema.default !== undefined) return schema.default;
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) return plausible(options.find((o: Schema) => o.type !== 'null') ?? options[0], name, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return 'x'.repeat(Math.max(4, schema.minLength ?? 0));
    case 'number':
    case 'integer':
      return Math.max(1, schema.minimum ?? 1);
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((key: string) => [key, plausible(schema.properties?.[key], key, depth + 1)]));
    default:
      return 'fuzz';
  }
}

const oddUnicode = fc.oneof(
  fc.constantFrom(
    '\ud800',
    '\udfff',
    'a\ud800b',
    '\u202eevil\u202c',
    '\u200b',
    '\u200d\u200c',
    'a\u0000b',
    '\u0000',
    '\ufeff',
    '\uffff',
    '𝕏̸̡',
    '٠١٢',
    'İı',
    '\u2028\u2029',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
);
const wrongTyped: fc.Arbitrary<Json> = fc.constantFrom<Json>(0, -1, 1.5, true, false, null, '', 'x', [], [1, 'a'], {}, { a: { b: [] } }, '0', 'true', 'null');
const nonFinite = fc.constantFrom<Json>(POS_INF, NEG_INF, NAN, 'NaN', 'Infinity', '-Infinity', '1e999', 'nan');
const negative = fc.constantFrom<Json>(-1, -0, -1e308, -9007199254740993, 9007199254740993, 1e308, 0.0000001, -0.5, '-1', '-0', '1e400', '0x-1', 2 ** 64);
const deep = fc.constantFrom<Json>(DEEP_ARRAY, DEEP_OBJECT);
const huge: fc.Arbitrary<Json> = fc.oneof(
  fc.constant('A'.repeat(HUGE)),
  fc.constant('\u00e9'.repeat(HUGE / 2)),
  fc.constant(Array.from({ length: 20_000 }, (_, i) => i)),
  fc.constant(Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, i]))),
);
const pollution: fc.Arbitrary<Json> = fc.constantFrom<Json>({ isAdmin: true, scope: null, organizationId: 'other' }, { polluted: 1 }, 'polluted', null, []);
const protoKey = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf');

/** An object with an own `__proto__` key (a computed key is an own property, and JSON.stringify keeps it). */
const withKey = (target: Record<string, Json>, key: string, value: Json) => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  return target;
};

/** Any one bad value, for a mutation deep inside an otherwise valid input. */
const anyBad: fc.Arbitrary<Json> = fc.oneof(
  wrongTyped,
  huge,
  deep,
  nonFinite,
  negative,
  oddUnicode,
  pollution.map((v) => withKey({}, '__proto__', v)),
);

/** Every property filled (arrays with one item), so nested paths exist to mutate. */
function fullPlausible(schema: Schema | undefined, name: string, depth = 0): Json {
  if (!schema || depth > 5 || name in HINTS || 'const' in schema || Array.isArray(schema.enum)) return plausible(schema, name, depth);
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) return fullPlausible(options.find((o: Schema) => o.type !== 'null') ?? options[0], name, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'array') return [fullPlausible(schema.items, name, depth + 1)];
  if (type === 'object' && schema.properties)
    return Object.fromEntries(Object.entries(schema.properties as Record<string, Schema>).map(([k, v]) => [k, fullPlausible(v, k, depth + 1)]));
  return plausible(schema, name, depth);
}

/**
 * Realistic inputs from the domain's own registries, so a mutation lands past
 * the first validation layer: workflow graphs and node configs from each
 * action's exampleConfig, integration configs from each type's schema.
 */
function domainSeeds(properties: Record<string, Schema>): Record<string, Json>[] {
  const seeds: Record<string, Json>[] = [];
  const trigger = { id: 'trigger', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
  for (const action of actions) {
    const config = { actionType: action.actionType, ...(action.exampleConfig ?? {}) } as Json;
    if (properties.nodes)
      seeds.push({
        name: 'fuzz',
        nodes: [trigger, { id: 'a', type: action.actionType, data: { label: 'A', config } }],
        edges: [{ id: 'e', source: 'trigger', target: 'a' }],
      });
    if (properties.actionType && properties.config) seeds.push({ actionType: action.actionType, config });
  }
  if (properties.type && properties.config) {
    for (const [type, spec] of Object.entries(INTEGRATION_TYPES))
      seeds.push({ name: 'fuzz', type, config: fullPlausible(toJsonSchema(spec.schema, 'input') as Schema, 'config') });
  }
  if (properties.configOverrides) {
    for (const spec of Object.values(INTEGRATION_TYPES)) seeds.push({ configOverrides: fullPlausible(toJsonSchema(spec.schema, 'input') as Schema, 'config') });
  }
  if (properties.inputs) seeds.push({ inputs: { amount: '1', address: HINTS.address!, note: 'x' } });
  return seeds;
}

/** Paths to every value inside a JSON value (depth-bounded), the root excluded. */
function pathsOf(value: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  if (prefix.length > 6 || value === null || typeof value !== 'object') return out;
  for (const [key, child] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    out.push([...prefix, key]);
    pathsOf(child as Json, [...prefix, key], out);
  }
  return out;
}

/** A copy of `value` with the value at `path` replaced (or deleted when `replacement` is undefined). */
function mutateAt(value: Json, path: (string | number)[], replacement: Json | undefined): Json {
  const copy = structuredClone(value) as any;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key];
  const last = path[path.length - 1]!;
  if (replacement === undefined) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else if (typeof last === 'string') withKey(node, last, replacement);
  else node[last] = replacement;
  return copy;
}

const nonEmpty = <T>(list: T[], fallback: T): T[] => (list.length > 0 ? list : [fallback]);

/** Structure-aware mutation has the most ground to cover: it gets more runs than the flat kinds. */
const runsFor = (kind: Kind) => (kind === 'nested' ? RUNS * 5 : RUNS);

const KINDS = ['wrongType', 'missing', 'huge', 'deep', 'proto', 'nonFinite', 'negative', 'unicode', 'extra', 'junk', 'nested'] as const;
type Kind = (typeof KINDS)[number];

/** `internal`: the deployment's internal service secret, for `internal`-scoped operations. */
type Auth = 'org' | 'anonymous' | 'internal';
const INTERNAL_SECRET = 'fuzz-internal-service-secret-0123456789abcdef';

interface Case {
  tool: string;
  kind: Kind;
  auth: Auth;
  input: Json;
  /** Path parameters (REST); also merged into MCP arguments. */
  params: Record<string, string>;
  /** An `Idempotency-Key` header (REST). */
  idempotencyKey?: string;
  deep: boolean;
}

interface Outcome {
  status: number;
  text: string;
  refused: boolean;
  internal: boolean;
}

/** Header values a client can send (latin-1 only), odd ones included. */
const idempotencyKeys = fc.oneof(
  fc.constantFrom('', ' ', '\t', 'a'.repeat(256), 'a'.repeat(8_000), '\u00ff\u00e9', '../x', '__proto__', 'null', '-1'),
  fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
);

const pathParams = (tool: AnyTool) => [...(tool.rest?.path.matchAll(/:([A-Za-z0-9_]+)/g) ?? [])].map((m) => m[1]!);

/** Operations whose valid call destroys seeded state by design: they only ever see fuzzed ids. */
const destroys = (tool: AnyTool) => tool.rest?.method === 'DELETE' || (tool.mcp && tool.mcp.annotations.destructiveHint === true);

function caseArbitrary(tool: AnyTool, kind: Kind, realIds: Record<string, string>): fc.Arbitrary<Case> {
  const schema = inputJsonSchema(tool) as Schema;
  const properties: Record<string, Schema> = schema.properties ?? {};
  const required: string[] = schema.required ?? [];
  const params = pathParams(tool);
  const bodyFields = Object.keys(properties).filter((k) => !params.includes(k));
  const fields = bodyFields.length > 0 ? bodyFields : ['fuzz'];

  const fuzzedId = fc.oneof(
    fc.constantFrom('..', '%2e%2e', '-1', 'NaN', '__proto__', 'constructor', '0', 'a'.repeat(5_000), 'a'.repeat(65), '\u0000', 'null', 'undefined'),
    oddUnicode.filter((s) => s.length > 0),
    fc.string({ minLength: 1, maxLength: 30 }),
  );
  const param = (name: string) => (realIds[name] && !destroys(tool) ? fc.oneof(fc.constant(realIds[name]!), fuzzedId) : fuzzedId);
  const paramArb = fc.record(Object.fromEntries(params.map((p) => [p, param(p)])) as Record<string, fc.Arbitrary<string>>);

  const base = () => Object.fromEntries(required.filter((k) => !params.includes(k)).map((k) => [k, plausible(properties[k], k)])) as Record<string, Json>;
  const set = (key: string, value: Json) => withKey(base(), key, value);

  const field = fc.constantFrom(...fields);
  const byKind: Record<Kind, fc.Arbitrary<Json>> = {
    wrongType: fc.tuple(field, wrongTyped).map(([k, v]) => set(k, v)),
    missing: fc.constantFrom(...(required.length > 0 ? required : ['-'])).map((k) => {
      const input = base();
      delete input[k];
      return input;
    }),
    huge: fc.tuple(field, huge).map(([k, v]) => set(k, v)),
    deep: fc.oneof(
      fc.tuple(field, deep).map(([k, v]) => set(k, v)),
      deep,
    ),
    proto: fc
      .tuple(protoKey, pollution, fc.option(field, { nil: undefined }))
      .map(([key, value, inside]) => (inside ? set(inside, withKey({}, key, value)) : withKey(base(), key, value))),
    nonFinite: fc.tuple(field, nonFinite).map(([k, v]) => set(k, v)),
    negative: fc.tuple(field, negative).map(([k, v]) => set(k, v)),
    unicode: fc.tuple(field, oddUnicode).map(([k, v]) => set(k, v)),
    extra: fc
      .dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, { maxKeys: 4 })
      .map((extra) => ({ ...base(), ...extra })),
    junk: fc.oneof(fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, fc.constantFrom<Json>([], 'string', 42, null, true)),
    nested: fc
      .constantFrom(
        ...nonEmpty(
          [fullPlausible(schema, '(input)'), ...domainSeeds(properties)].filter((seed) => pathsOf(seed).length > 0),
          { fuzz: 'x' },
        ),
      )
      .chain((seed) => fc.tuple(fc.constant(seed), fc.constantFrom(...pathsOf(seed)), fc.option(anyBad, { nil: undefined, freq: 6 })))
      .map(([seed, path, bad]) => mutateAt(seed, path, bad)),
  };
  const auth =
    tool.scope === 'internal'
      ? fc.constantFrom<Auth>('internal', 'internal', 'org', 'anonymous')
      : tool.scope === 'public' || tool.anonymous
        ? fc.constantFrom<Auth>('org', 'anonymous')
        : fc.constantFrom<Auth>('org', 'org', 'org', 'anonymous');
  return fc
    .record({ input: byKind[kind], params: paramArb, auth, idempotencyKey: fc.option(idempotencyKeys, { nil: undefined, freq: 3 }) })
    .map((c) => ({ ...c, kind, tool: tool.name, deep: [DEEP_ARRAY, DEEP_OBJECT].some((m) => JSON.stringify(c.input).includes(JSON.stringify(m))) }));
}

// ---------------------------------------------------------------- checks

/** Stack frames, source locations and paths of this machine: none may reach a caller. */
const LEAKS: RegExp[] = [
  /\bat [\w.<>$]+ \(?[^)\s]*:\d+:\d+\)?/,
  /\/work\//,
  /node_modules/,
  /\.ts:\d+/,
  /\/tmp\/flowgate-/,
  /file:\/\//,
  /\bSqliteError\b/,
  /\bTypeError: /,
  /\bRangeError: /,
];

function leaks(text: string): string | undefined {
  return LEAKS.find((pattern) => pattern.test(text))?.source;
}

/** Percent-encodes a path segment, lone surrogates included (as the bytes a sloppy client would send). */
function encodeSegment(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return [...value]
      .map((ch) => {
        try {
          return encodeURIComponent(ch);
        } catch {
          const code = ch.charCodeAt(0);
          return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
        }
      })
      .join('');
  }
}

function queryString(input: Json): string {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input === null || input === undefined ? '' : `q=${encodeSegment(String(input))}`;
  return Object.keys(input)
    .flatMap((key) => {
      const value = input[key];
      const values = Array.isArray(value) ? value : [value];
      return values.map((v) => `${encodeSegment(key)}=${encodeSegment(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))}`);
    })
    .join('&');
}

// ---------------------------------------------------------------- the gateway

let gw: TestGateway;
let orgKey: string;
let db: Database.Database;
let mcpOrg: Client;
let mcpAnon: Client;
const realIds: Record<string, string> = {};

/** Tables a refused request must not touch. Rate-limit counters and key last-use stamps change by design. */
let tables: string[] = [];
const IGNORED_TABLES = new Set(['rate_limits', 'rate_limit_hits', 'kysely_migration', 'kysely_migration_lock', 'api_keys']);

/**
 * A digest per table. On SQLite it is cached against data_version, which changes
 * only when another connection commits, so most cases cost one pragma read. On
 * PostgreSQL one prepared query reads each table's row count and newest row
 * version (xmin): an insert, a delete or an update (which writes a new row
 * version, even with the same values) changes it. Hashing every row's text, as
 * before, cost 7–14 ms a case, most of this file's two minutes on PostgreSQL.
 */
let cached: { version: number; digests: Record<string, string> } | undefined;
let postgresDigests: { client: pg.Client; text: string } | undefined;
async function snapshot(): Promise<Record<string, string>> {
  if (postgresDigests) return (await postgresDigests.client.query<Record<string, string>>({ name: 'digests', text: postgresDigests.text })).rows[0];
  const version = db.pragma('data_version', { simple: true }) as number;
  if (cached?.version !== version) {
    const digests = Object.fromEntries(
      tables.map((t) => [
        t,
        createHash('sha256')
          .update(JSON.stringify(db.prepare(`SELECT * FROM "${t}"`).raw().all()))
          .digest('hex'),
      ]),
    );
    cached = { version, digests };
  }
  return cached.digests;
}

/** Runs started by an accepted request keep writing after it answers; wait for them so they are not blamed on the next case. */
async function settle(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const busy = await gw.gateway.services.store
      .selectFrom('workflow_executions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', 'in', ['pending', 'running'])
      .executeTakeFirstOrThrow();
    if (Number(busy.n) === 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function sendRest(tool: AnyTool, c: Case): Promise<Outcome> {
  const rest = tool.rest!;
  const path = rest.path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeSegment(c.params[name] ?? ''));
  const hasBody = ['POST', 'PUT', 'PATCH'].includes(rest.method);
  const query = hasBody ? '' : queryString(c.input);
  const headers: Record<string, string> = {};
  if (c.auth === 'org') headers.authorization = `Bearer ${orgKey}`;
  if (c.auth === 'internal') headers['x-internal-service-token'] = INTERNAL_SECRET;
  if (hasBody) headers['content-type'] = 'application/json';
  if (c.idempotencyKey !== undefined) headers['idempotency-key'] = c.idempotencyKey;
  const response = await fetch(`${gw.url}${path}${query ? `?${query}` : ''}`, {
    method: rest.method,
    headers,
    body: hasBody ? serialize(c.input) : undefined,
    signal: AbortSignal.timeout(20_000),
  });
  const text = await response.text();
  return { status: response.status, text, refused: response.status >= 400, internal: response.status >= 500 || /"code":"internal_error"/.test(text) };
}

async function sendMcp(tool: AnyTool, c: Case): Promise<Outcome> {
  const args = c.input && typeof c.input === 'object' && !Array.isArray(c.input) ? { ...c.input, ...c.params } : c.input;
  const argsText = serialize(args);
  // Plain JSON through the SDK client, as agents send it; what JSON.stringify cannot express goes raw.
  if (!hasMarker(JSON.stringify(args)) && args && typeof args === 'object' && !Array.isArray(args)) {
    const client = c.auth === 'org' ? mcpOrg : mcpAnon;
    try {
      const result = await client.callTool({ name: tool.name, arguments: args as Record<string, unknown> });
      const text = JSON.stringify(result);
      const internal = result.isError === true && /"code\\?":\\?"internal_error/.test(text);
      return { status: 200, text, refused: result.isError === true, internal };
    } catch (error) {
      const e = error as { code?: number; message?: string };
      const text = `${e.code} ${e.message}`;
      return { status: 200, text, refused: true, internal: e.code === -32603 };
    }
  }
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  };
  if (c.auth === 'org') headers.authorization = `Bearer ${orgKey}`;
  const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":${JSON.stringify(tool.name)},"arguments":${argsText}}}`;
  const response = await fetch(`${gw.url}/mcp`, { method: 'POST', headers, body, signal: AbortSignal.timeout(20_000) });
  const text = await response.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const rpcError = parsed?.error?.code as number | undefined;
  const isError = parsed?.result?.isError === true;
  const internal = response.status >= 500 || rpcError === -32603 || (isError && /"code\\?":\\?"internal_error/.test(text));
  return { status: response.status, text, refused: response.status >= 400 || rpcError !== undefined || isError, internal };
}

/**
 * A third party this machine cannot reach (no network, no devnet) is an honest
 * 502/503 with its documented code, not a gateway failure: the fuzz input was
 * valid enough to get there. Anything else at 5xx is a finding.
 */
const UPSTREAM_CODES = new Set(['chain_unavailable', 'rpc_unavailable', 'explorer_unavailable', 'payments_unavailable', 'run_not_started']);
function upstreamUnavailable(outcome: Outcome): boolean {
  const code = /"code\\?":\\?"([a-z_]+)/.exec(outcome.text)?.[1];
  return code !== undefined && UPSTREAM_CODES.has(code) && (outcome.status === 502 || outcome.status === 503 || outcome.status === 200);
}

/** What the run saw, printed at the end (and useful when tuning RUNS). */
const stats = { cases: 0, refused: 0, accepted: 0, upstream: {} as Record<string, number>, snapshotMs: 0, sendMs: 0 };

/** One fuzz case: send, then check status, leaks and (when refused) that no row changed. */
async function check(c: Case, send: () => Promise<Outcome>): Promise<void> {
  await settle();
  let t = performance.now();
  const before = await snapshot();
  stats.snapshotMs += performance.now() - t;
  t = performance.now();
  const outcome = await send();
  stats.sendMs += performance.now() - t;
  stats.cases++;
  if (upstreamUnavailable(outcome)) stats.upstream[c.tool] = (stats.upstream[c.tool] ?? 0) + 1;
  stats[outcome.refused ? 'refused' : 'accepted']++;
  const where = `${c.tool} (${c.kind}, ${c.auth}) -> ${outcome.status} ${outcome.text.slice(0, 400)}`;
  expect(outcome.internal && !upstreamUnavailable(outcome), `internal error: ${where}`).toBe(false);
  expect(leaks(outcome.text), `leak: ${where}`).toBeUndefined();
  if (outcome.refused) {
    await settle();
    const after = await snapshot();
    const changed = tables.filter((t) => before[t] !== after[t]);
    expect(changed, `refused request wrote rows: ${where}`).toEqual([]);
  }
}

beforeAll(async () => {
  // Limits far above the fuzz volume, so handlers run rather than the limiter answering 429.
  const limits = Object.fromEntries(Object.values(RATE_LIMIT_VARIABLES).map((spec) => [spec.variable, '1000000']));
  gw = await startTestGateway({ env: { ...limits, FLOWGATE_INTERNAL_SERVICE_SECRET: INTERNAL_SECRET } });
  orgKey = gw.ownerKey;
  const { store } = gw.gateway.services;
  if (store.getExecutor().adapter instanceof PostgresAdapter) {
    const rows = await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(store);
    tables = rows.rows.map((r) => r.name).filter((t) => !IGNORED_TABLES.has(t));
    const client = new pg.Client({ connectionString: gw.gateway.services.config.databaseUrl });
    await client.connect();
    postgresDigests = {
      client,
      text: `select ${tables.map((t) => `(select count(*) || ':' || coalesce(max(xmin::text::bigint), 0) from "${t}") as "${t}"`).join(', ')}`,
    };
  } else {
    db = new Database(databaseFile(gw.dataDir), { readonly: true, fileMustExist: true });
    tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[])
      .map((r) => r.name)
      .filter((t) => !IGNORED_TABLES.has(t));
  }

  // Seeded records, so fuzzed requests also reach handlers with ids that exist.
  const post = async (path: string, body: unknown, method = 'POST') => {
    const res = await fetchJson(`${gw.url}${path}`, { method, key: orgKey, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`seed ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  await fetchJson(`${gw.url}/api/user/wallet`, { key: orgKey }); // the wallet is made on first read
  const trigger = { id: 'trigger', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
  realIds.workflowId = (await post('/api/workflows/create', { name: 'Fuzz target', nodes: [trigger], edges: [] })).id;
  realIds.tagId = (await post('/api/tags', { name: 'fuzz', color: '#123456' })).id;
  realIds.projectId = (await post('/api/projects', { name: 'fuzz' })).id;
  realIds.integrationId = (await post('/api/integrations', { name: 'fuzz', type: 'webhook', config: { url: 'https://example.com/hook' } })).id;
  realIds.keyId = (await post('/api/api-keys', { name: 'fuzz' })).id;
  realIds.executionId = (await post(`/api/workflows/${realIds.workflowId}/execute`, {})).executionId;
  realIds.slug = 'fuzz-listing';
  await post(`/api/workflows/${realIds.workflowId}/listing`, {
    slug: 'fuzz-listing',
    title: 'Fuzz',
    description: 'Fuzz target',
    price: null,
    inputSchema: { type: 'object' },
  });
  realIds.pluginType = 'web3';
  realIds.chainId = '8453';
  await settle();

  mcpOrg = await connectMcp(gw.url, orgKey);
  mcpAnon = await connectMcp(gw.url);
}, 60_000);

afterAll(async () => {
  console.log(`fuzz: seed ${SEED}, ${RUNS} runs per operation, transport and kind;`, JSON.stringify(stats));
  await mcpOrg?.close();
  await mcpAnon?.close();
  db?.close();
  await postgresDigests?.client.end();
  await gw?.close();
});

describe('fuzzing every registry operation', () => {
  it('covers the whole registry', () => {
    // Every operation is reachable by one of the two transports below.
    expect(registry.filter((t) => !t.rest && !t.mcp)).toEqual([]);
    expect(registry.length).toBeGreaterThan(50);
  });

  // FUZZ_ONLY=name,name reproduces a failure on a few operations.
  const only = process.env.FUZZ_ONLY?.split(',');
  for (const tool of registry.filter((t) => !only || only.includes(t.name))) {
    if (tool.rest) {
      it(`REST ${tool.rest.method} ${tool.rest.path} (${tool.name})`, async () => {
        for (const kind of KINDS) {
          await fc.assert(
            fc.asyncProperty(caseArbitrary(tool, kind, realIds), (c) => check(c, () => sendRest(tool, c))),
            { seed: SEED, numRuns: runsFor(kind), endOnFailure: true },
          );
        }
      });
    }
    if (tool.mcp) {
      it(`MCP tools/call ${tool.name}`, async () => {
        for (const kind of KINDS) {
          await fc.assert(
            fc.asyncProperty(caseArbitrary(tool, kind, realIds), (c) => check(c, () => sendMcp(tool, c))),
            { seed: SEED, numRuns: runsFor(kind), endOnFailure: true },
          );
        }
      });
    }
  }
});
