import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import type { AnyTool, ToolContext } from './define.ts';
import { authorize } from './authorize.ts';
import { requireRole } from '../src/org/roles.ts';
import { rateLimitedError, rateLimitHeaders } from '../src/guards/rate-limit.ts';
import type { RateLimitName } from '../src/config.ts';
import { parseIdempotencyKey } from '../src/guards/idempotency.ts';
import { declaresField } from './unknown-fields.ts';
import { signalDeprecations } from './deprecations.ts';
import { deepFreeze, isDeepFrozen } from '../src/immutable.ts';

/**
 * The single invocation path shared by the REST and MCP edges:
 * authorize → validate input → handler → shape output.
 */

export interface InputIssue {
  path: string;
  message: string;
  code: string;
}

export function describeIssues(error: z.ZodError): InputIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(body)',
    message: issue.message,
    code: issue.code,
  }));
}

export function invalidInput(issues: InputIssue[]): ServiceError {
  const summary = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return new ServiceError(400, 'invalid_input', `Invalid input: ${summary}`, { issues });
}

/**
 * A string no text column holds as sent. PostgreSQL text cannot store a NUL character (U+0000; SQLite can), so a
 * gateway would answer the same input differently by store. Half of a UTF-16 surrogate pair (a lone `\ud800` escape)
 * is not text: it was stored as U+FFFD while the answer echoed what was sent. Both are refused, naming the field.
 */
const unstorable = (text: string): 'nul' | 'surrogate' | undefined =>
  text.includes('\u0000') ? 'nul' : (text as string & { isWellFormed(): boolean }).isWellFormed() ? undefined : 'surrogate';

/** The path of the first such string, and what is wrong with it. */
function badTextPath(value: unknown): { path: string[]; kind: 'nul' | 'surrogate' } | undefined {
  if (typeof value === 'string') {
    const kind = unstorable(value);
    return kind ? { path: [], kind } : undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  // The path is built only on the way back from a find: the common clean input allocates nothing.
  for (const [key, child] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    const found = badTextPath(child);
    if (found) return { ...found, path: [String(key), ...found.path] };
  }
  return undefined;
}

/** Synchronous parsing is several times cheaper; only schemas with async refinements need the async path. */
async function parse<T extends z.ZodType>(schema: T, value: unknown) {
  try {
    return schema.safeParse(value);
  } catch (error) {
    if (error instanceof z.core.$ZodAsyncError) return schema.safeParseAsync(value);
    throw error;
  }
}

/** Consumes one request of a limit, putting its X-RateLimit-* headers on the response; past it, the one 429. */
export async function consumeRateLimit(name: RateLimitName, key: string, ctx: ToolContext): Promise<void> {
  const decision = await ctx.services.rateLimiter.consume(name, key);
  const headers = rateLimitHeaders(decision);
  for (const [header, value] of Object.entries(headers)) ctx.setHeader(header, value);
  if (!decision.allowed) throw rateLimitedError(name, decision);
}

export async function invokeTool(tool: AnyTool, rawInput: unknown, ctx: ToolContext): Promise<unknown> {
  // First, so refusals (401, 400) that used a deprecated shape say so too.
  signalDeprecations(tool, rawInput, ctx);
  authorize(ctx, tool, `${ctx.services.config.baseUrl}/.well-known/oauth-protected-resource`);
  // An API key keeps the scope it was made with, but an admin operation also needs its user to be an admin or owner
  // now: the one check for every mcp:admin handler (a demoted admin's key could use those that forgot to look).
  // Sessions carry their role (authorize) and OAuth tokens' scope is capped by it, both read on every request.
  if (tool.scope === 'mcp:admin' && ctx.principal?.kind === 'api_key') await requireRole(ctx.services.store, ctx.principal, 'admin');
  if (tool.rateLimit && ctx.principal) {
    const key = tool.rateLimit === 'executePerKey' ? ctx.principal.keyId : ctx.principal.organizationId;
    await consumeRateLimit(tool.rateLimit, key, ctx);
  }

  if (tool.quotas) ctx = { ...ctx, quotas: Object.fromEntries(tool.quotas.map((name) => [name, ctx.services.config.quotas[name]])) };

  const parsed = await parse(tool.input, rawInput ?? {});
  if (!parsed.success) throw invalidInput(describeIssues(parsed.error));
  const bad = badTextPath(parsed.data);
  if (bad) {
    const path = bad.path.join('.') || '(body)';
    throw invalidInput([
      bad.kind === 'nul'
        ? { path, message: 'contains a NUL character (\\u0000), which no text field can hold; remove it', code: 'nul_character' }
        : {
            path,
            message: 'contains half of a UTF-16 surrogate pair (a lone \\ud800-\\udfff escape), which is not text; send whole characters',
            code: 'lone_surrogate',
          },
    ]);
  }
  // The key arrives as a header (REST) or as the `idempotency_key` argument of an operation that declares one (MCP,
  // and execute_workflow's REST body, which advertised it): one rule for both, trimmed, 1-255 characters.
  const argument = declaresField(tool, 'idempotency_key') ? (rawInput as Record<string, unknown> | undefined)?.idempotency_key : undefined;
  if (argument !== undefined && ctx.idempotencyKey !== undefined && argument !== ctx.idempotencyKey) {
    throw new ServiceError(
      400,
      'invalid_idempotency_key',
      'The request gives two different idempotency keys (the Idempotency-Key header and the idempotency_key field); send one.',
      { field: 'idempotency_key' },
    );
  }
  const idempotencyKey = ctx.idempotencyKey ?? argument;
  if (idempotencyKey !== undefined) ctx = { ...ctx, idempotencyKey: parseIdempotencyKey(idempotencyKey) };

  const output = await tool.handler(parsed.data, ctx);
  const kept = typeof output === 'object' && output !== null ? shapedOutputs.get(tool)?.get(output) : undefined;
  if (kept !== undefined) return kept;

  // Parsing the output strips undeclared fields, so a handler can never leak
  // more than its schema promises; a mismatch is our bug, reported without internals.
  const shaped = await parse(tool.output, output);
  if (!shaped.success) {
    console.error(`[flowgate] tool ${tool.name} returned output that does not match its schema:`, describeIssues(shaped.error));
    throw new ServiceError(500, 'internal_error', `The ${tool.name} operation produced an invalid response; this is a gateway bug.`);
  }
  if (typeof output === 'object' && output !== null && isDeepFrozen(output)) keepShaped(tool, output, shaped.data);
  return shaped.data;
}

/**
 * The shaped form of a deeply frozen handler output (a static list such as the chain catalog's): it cannot
 * change, so its check's verdict cannot either, and the next call returning the same value skips the check.
 * The shaped form is frozen too, so no caller can change what the next one gets.
 */
const shapedOutputs = new WeakMap<AnyTool, WeakMap<object, unknown>>();
function keepShaped(tool: AnyTool, output: object, shaped: unknown) {
  let kept = shapedOutputs.get(tool);
  if (!kept) shapedOutputs.set(tool, (kept = new WeakMap()));
  kept.set(output, deepFreeze(shaped));
}
