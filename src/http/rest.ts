import type { Request, RequestHandler, Response } from 'express';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { AnyTool, HttpMethod, RestBinding, ToolContext } from '../../tools/define.ts';
import { consumeRateLimit, invokeTool } from '../../tools/invoke.ts';
import { canUse } from '../../tools/authorize.ts';
import { declaresField, unknownFields } from '../../tools/unknown-fields.ts';
import { ServiceError } from '../errors.ts';
import type { RateLimitName } from '../config.ts';
import { serveEventStream } from './event-stream.ts';
import { onceForFrozen } from '../immutable.ts';
import { stringifyJson } from '../text/json-text.ts';

/** Mounts every registry entry that has a REST binding; nothing else defines routes. */

const BODY_METHODS: ReadonlySet<HttpMethod> = new Set(['POST', 'PUT', 'PATCH']);
const METHOD_ORDER: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const asRecord = (value: unknown): Record<string, unknown> => (value && typeof value === 'object' ? (value as Record<string, unknown>) : {});

function pick(source: Record<string, unknown>, keys: readonly string[]) {
  return Object.fromEntries(keys.filter((k) => k in source).map((k) => [k, source[k]]));
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Whether the operation reads a JSON body (and so can answer 413 and 415): POST, PUT, PATCH, and a DELETE that declares body fields. */
export const takesBody = (rest: RestBinding) => BODY_METHODS.has(rest.method) || (rest.method === 'DELETE' && rest.body !== undefined);

/** Path params, query and body merged into the tool's one input object (path wins, then body). */
function collectInput(tool: AnyTool, req: Request): Record<string, unknown> {
  const method = tool.rest!.method;
  const query = asRecord(req.query);
  const deleteBody = method === 'DELETE' ? tool.rest!.body : undefined;
  if (!takesBody(tool.rest!)) return { ...query, ...req.params };

  let body: Record<string, unknown> = {};
  if (req.body === undefined) {
    if (hasBody(req)) {
      throw new ServiceError(
        415,
        'unsupported_media_type',
        `Send the request body as JSON with Content-Type: application/json (got ${req.headers['content-type'] ?? 'no Content-Type'}).`,
      );
    }
  } else if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) {
    throw new ServiceError(400, 'invalid_input', `The request body must be a JSON object, got ${Array.isArray(req.body) ? 'an array' : typeof req.body}.`);
  } else {
    body = req.body as Record<string, unknown>;
  }
  if (deleteBody) {
    // Body fields of a DELETE (step-up proofs) come from the body only: a `?signature=` ends up in access logs.
    const misplaced = deleteBody.filter((k) => k in query);
    if (misplaced.length > 0) {
      throw new ServiceError(
        400,
        'invalid_input',
        `Send ${misplaced.map((k) => `\`${k}\``).join(', ')} in the JSON body of the DELETE, not in the query string (query strings end up in access logs).`,
        { issues: misplaced.map((k) => ({ path: k, message: 'goes in the JSON body', code: 'custom' })) },
      );
    }
    // The whole body, so a misspelled proof (`signatrue`) is refused by name below rather than dropped; from the query
    // only what the operation declares (unknown query parameters are ignored, as on every route).
    const fromQuery = Object.fromEntries(Object.entries(query).filter(([name]) => declaresField(tool, name)));
    return { ...body, ...fromQuery, ...req.params };
  }
  return { ...body, ...pick(query, tool.rest!.query ?? []), ...req.params };
}

/** A path whose percent-encoding cannot be decoded matches no route; say why rather than 404. */
function malformedEncoding(path: string): ServiceError | undefined {
  try {
    decodeURIComponent(path);
    return undefined;
  } catch {
    return new ServiceError(400, 'bad_request', `The request path ${path} has a malformed percent-encoding; encode path parameters with encodeURIComponent.`);
  }
}

/**
 * One lookup in a radix tree (find-my-way) per request instead of express
 * trying every registered route in turn: with a hundred-odd operations the
 * walk cost more than most handlers. Literal segments win over parameters at
 * the same position (`/api/workflows/public` before `/api/workflows/:workflowId`)
 * and, as with express's defaults, matching ignores case and a trailing slash.
 */
export interface OperationLookup {
  find(method: string, path: string): { tool: AnyTool; params: Record<string, string | undefined> } | undefined;
  /** Methods with an operation somewhere in the registry. */
  methods: ReadonlySet<string>;
}

export function operationLookup(registry: readonly AnyTool[]): OperationLookup {
  const routes = FindMyWay({ caseSensitive: false, ignoreTrailingSlash: true });
  const registered = new Set<HttpMethod>();
  for (const tool of registry) {
    if (!tool.rest) continue;
    routes.on(tool.rest.method, tool.rest.path, () => {}, { tool });
    registered.add(tool.rest.method);
  }
  // One fixed order (an `Allow` header lists them so), whatever order the registry's families come in.
  const methods = new Set<string>(METHOD_ORDER.filter((m) => registered.has(m)));
  return {
    methods,
    find(method, path) {
      // HEAD is answered by the GET operation (node sends the headers only).
      const found = methods.has(method === 'HEAD' ? 'GET' : method) ? routes.find((method === 'HEAD' ? 'GET' : method) as HTTPMethod, path) : null;
      return found ? { tool: (found.store as { tool: AnyTool }).tool, params: found.params } : undefined;
    },
  };
}

/**
 * What res.json sends, byte for byte and header for header (Content-Type, Content-Length, the strong ETag
 * of app.ts; express then answers 304 or HEAD as for res.json), with the serialization and the ETag's hash
 * kept for a deeply frozen output (a static list such as the chain catalog's: src/immutable.ts).
 */
function jsonSender(): (res: Response, output: object, beforeSending: (bytes: number) => Promise<void>) => Promise<void> {
  let etagOf: ((body: Buffer) => string | undefined) | undefined;
  const serialized = onceForFrozen((output: object) => {
    const body = Buffer.from(stringifyJson(output));
    return { body, etag: etagOf?.(body) };
  });
  return async (res, output, beforeSending) => {
    // Only a GET (or HEAD) answer can be revalidated: a POST's answer (a call, a run) gets no hash of its body.
    const readable = res.req.method === 'GET' || res.req.method === 'HEAD';
    if (readable) etagOf ??= res.app.get('etag fn') as typeof etagOf;
    const { body, etag } = readable ? serialized(output) : { body: Buffer.from(stringifyJson(output)), etag: undefined };
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', body.length);
    if (etag && !res.get('ETag')) res.setHeader('ETag', etag);
    if (!readable) {
      // express's send would hash the body for an ETag whatever the method.
      await beforeSending(body.length);
      return void res.end(body);
    }
    // A client whose copy is current gets a 304 with no body (express decides by the ETag set above).
    await beforeSending(res.req.fresh ? 0 : body.length);
    res.send(body);
  };
}

/** An answer costs one more point of the budget below for each this many bytes it holds. */
export const RESPONSE_POINT_BYTES = 64 * 1024;

/**
 * The budget a REST request counts against: its organization's for a credential (any key, session or OAuth token but
 * a `wfb_` webhook key), its IP's without one; none for an unmetered operation or with limits off.
 */
function budgetOf(ctx: ToolContext, rest: RestBinding): { name: RateLimitName; key: string } | undefined {
  const { principal, services } = ctx;
  if (!services.rateLimiter.enabled || rest.unmetered) return undefined;
  // Read only here: resolving the address walks the proxy settings.
  if (!principal) return { name: 'restAnonymousPerIp', key: ctx.ip };
  return principal.kind === 'user_key' ? undefined : { name: 'restPerOrganization', key: principal.organizationId };
}

/**
 * Every REST request counts against one budget: an organization's credentials share FLOWGATE_RATE_LIMIT_REST_PER_ORG
 * (as MCP requests already did: reads cost the shared process too, and one tenant's keys could otherwise ask as fast
 * as the gateway answers), and callers without one share FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP per address (an
 * anonymous query of the public list that misses its cache reads up to 8 MiB). A large answer costs more, since
 * reading, parsing and sending it does: one point, plus one per RESPONSE_POINT_BYTES it holds, charged before it is
 * sent (an 8 MiB list is 129 points). Webhook calls (`wfb_` keys) are not counted: their runs are bounded by the run
 * queue, and another system's burst should not lock the organization out of its own API. A narrower limit of the
 * operation (direct execution, object writes, sign-in) is consumed after this one and its headers win.
 */
async function consumeBudget(ctx: ToolContext, rest: RestBinding): Promise<void> {
  const budget = budgetOf(ctx, rest);
  if (budget) await consumeRateLimit(budget.name, budget.key, ctx);
}

/** The extra points of an answer of `bytes`, charged before it is sent (so the caller's next request sees them). */
async function chargeAnswer(ctx: ToolContext, rest: RestBinding, bytes: number): Promise<void> {
  const budget = budgetOf(ctx, rest);
  const points = Math.floor(bytes / RESPONSE_POINT_BYTES);
  if (budget && points > 0) await ctx.services.rateLimiter.charge(budget.name, budget.key, points);
}

export function restRouter(registry: readonly AnyTool[], contextFor: (req: Request, res: Response) => ToolContext): RequestHandler {
  const sendJson = jsonSender();
  const operations = operationLookup(registry);
  const lookup = (method: string, path: string) => operations.find(method, path);

  return async (req, res, next) => {
    const found = lookup(req.method, req.path);
    if (!found) {
      const allowed = [...operations.methods].filter((method) => lookup(method, req.path));
      if (allowed.length === 0) return next(malformedEncoding(req.path));
      const allow = [...allowed, ...(allowed.includes('GET') ? ['HEAD'] : []), 'OPTIONS'].join(', ');
      return next(new ServiceError(405, 'method_not_allowed', `Method ${req.method} is not allowed on ${req.path}; allowed: ${allow}.`, {}, { Allow: allow }));
    }
    const { tool } = found;
    const rest = tool.rest!;
    try {
      req.params = found.params as Record<string, string>;
      const ctx = contextFor(req, res);
      await consumeBudget(ctx, rest);
      if (rest.eventStream) return await serveEventStream(tool, collectInput(tool, req), req, res, ctx);
      const input = collectInput(tool, req);
      // A misspelled body field is refused, never dropped (tools/unknown-fields.ts); a caller who may not use the operation gets its 401/403 first.
      const unknown = takesBody(rest) && canUse(ctx.principal, tool) ? unknownFields(tool, input, 'field') : undefined;
      if (unknown) throw unknown;
      const output = await invokeTool(tool, input, ctx);
      if (rest.cacheControl) res.setHeader('Cache-Control', rest.cacheControl);
      res.status((res.locals.status as number | undefined) ?? rest.status ?? 200);
      if (typeof output === 'object' && output !== null && !res.get('Content-Type')) await sendJson(res, output, (bytes) => chargeAnswer(ctx, rest, bytes));
      else res.json(output);
    } catch (error) {
      next(error);
    }
  };
}

/** Express `:param` paths as OpenAPI `{param}` templates. */
export const openApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
