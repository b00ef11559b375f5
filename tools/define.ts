import type { z } from 'zod';
import type { Services } from '../src/services.ts';
import type { QuotaName } from '../src/config.ts';
import type { ErrorCode } from '../src/errors.ts';
import type { DeprecationName } from './deprecations.ts';
import type { KeyScope, Principal } from '../src/auth/principal.ts';

export type { KeyScope, Principal };

/**
 * The tool registry's contract. Every operation of the gateway is one
 * `defineTool({...})` value; the REST routes, MCP tools, /openapi.json and
 * the discovery cards are generated from the list in tools/index.ts.
 */

/**
 * `public`: anyone; `mcp:*`: an organization principal whose scope allows it;
 * `session`: a signed-in browser; `internal`: another service of this
 * deployment presenting the shared internal secret; `webhook`: a webhook
 * trigger, callable with a `wfb_` user key or an organization key that could
 * start runs (mcp:write).
 */
export type ToolScope = 'public' | 'mcp:read' | 'mcp:write' | 'mcp:admin' | 'session' | 'internal' | 'webhook';

export interface ToolContext {
  principal: Principal | null;
  services: Services;
  /** `Idempotency-Key` header (REST) or `idempotency_key` argument (MCP). */
  idempotencyKey?: string;
  /** True when the request carried the deployment's internal service secret. */
  internalService: boolean;
  /** Caller address, for per-IP limits. */
  ip: string;
  transport: 'rest' | 'mcp';
  /** The whole registry, for operations that describe it (tools_documentation). */
  tools: readonly AnyTool[];
  /** The limits of the operation's declared `quotas`, set by invokeTool. */
  quotas?: Partial<Record<QuotaName, number>>;
  /** Adds a response header (REST); ignored where the transport has no headers. */
  setHeader(name: string, value: string): void;
  /** Overrides the REST success status for this response (a replayed 202, a 200 simulation); ignored over MCP. */
  setStatus(status: number): void;
  /** The sign-up cookie's value (REST only): which sign-up this browser made (src/auth/session-cookie.ts). */
  signUpBinding?: string;
  /** The HTTP request as a trigger sees it (REST only): method, non-secret headers, query. */
  request?: { method: string; headers: Record<string, string>; query: Record<string, unknown> };
  /**
   * Payment credentials of a paid workflow call: the x402 `PAYMENT-SIGNATURE` and MPP
   * `Authorization: Payment` headers (REST), or `_meta["x402/payment"]` and
   * `_meta["org.paymentauth/credential"]` (MCP).
   */
  payment?: { x402?: unknown; mpp?: unknown };
  /** Adds an entry to the MCP result's `_meta` (payment receipts); ignored on REST. */
  setResultMeta?(key: string, value: unknown): void;
  /** Progress notifications for long calls (MCP with a progress token); absent elsewhere. */
  notifyProgress?(progress: number, total?: number, message?: string): void;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RestBinding {
  method: HttpMethod;
  /** Express-style path: `/api/chains/:chainId/abi`. Path params, query and body merge into one input object. */
  path: string;
  /** Success status; 200 when omitted. */
  status?: number;
  /** For POST/PUT/PATCH: input fields read from the query string instead of the body. */
  query?: readonly string[];
  /** For DELETE: input fields read from a JSON body (step-up proofs go in the body, SPEC Authentication rule 8); the rest come from the query. */
  body?: readonly string[];
  /** `Cache-Control` for successful responses (public documents); ETag and 304 come with it. */
  cacheControl?: string;
  /**
   * Not counted against the REST budgets (src/http/rest.ts): health checks, which a load balancer sends from one
   * address however much of that address's anonymous budget other callers behind it have used.
   */
  unmetered?: true;
  /** One-line summary for OpenAPI when it should differ from `title`. */
  summary?: string;
  /**
   * Takes an `Idempotency-Key` header (read by its handler as `ctx.idempotencyKey`): /openapi.json lists the header
   * and the idempotency errors it can answer.
   */
  idempotencyKey?: true;
  /**
   * Error codes this operation answers beyond those /openapi.json derives for every operation (400, 429, auth;
   * 404 with a path parameter; 413 and 415 with a body; 409 with quotas): listed there by status.
   */
  errors?: readonly ErrorCode[];
  /**
   * A server-sent-events feed (src/http/event-stream.ts): the edge calls the
   * handler every `intervalMs` and sends its output as an event (with an `id:`)
   * only when it changed, and a comment every `heartbeatMs` of silence.
   */
  /** `wakeOnRunEnd`: check at once (coalesced) when a run ends on any instance, rather than waiting out `intervalMs`. */
  eventStream?: { intervalMs: number; heartbeatMs: number; wakeOnRunEnd?: boolean };
}

export interface McpBinding {
  annotations: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  /**
   * MCP structured content must be an object: a tool whose output is an array
   * (a bare REST list) is returned over MCP as `{[resultKey]: output}`.
   */
  resultKey?: string;
  /**
   * false: publish no outputSchema. For tools whose error results carry structured
   * content (a payment challenge), which MCP clients validate against the schema.
   */
  outputSchema?: false;
}

/** The annotations of a tool that only reads this gateway's own data. */
export const READ_ONLY_LOCAL = { readOnlyHint: true, idempotentHint: true, openWorldHint: false } as const;

export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** snake_case; the MCP tool name and the OpenAPI operationId. */
  name: string;
  title: string;
  /** Written for an agent: what it does, when to use it, what to call next. */
  description: string;
  input: I;
  output: O;
  scope: ToolScope;
  /**
   * Also callable without any credential (the handler then sees principal
   * null); authenticated callers still need `scope`.
   */
  anonymous?: boolean;
  /**
   * Input names taken and ignored, outside the schema (tools/unknown-fields.ts refuses any other undeclared name):
   * the envelope of download_workflow's portable JSON, which create_workflow takes back unchanged.
   */
  accepts?: readonly string[];
  /**
   * A request-rate limit, consumed after authorization and before validation:
   * `executePerKey` per API key, `objectWritesPerOrganization` per organization
   * (writes of stored objects, whichever key or session makes them). Its
   * X-RateLimit-* headers go on every response of the tool.
   */
  rateLimit?: 'executePerKey' | 'objectWritesPerOrganization';
  /**
   * The per-organization bounds (QUOTA_VARIABLES) this operation adds an object against: past one it answers
   * 409 quota_exceeded. invokeTool hands the handler their limits in ctx.quotas, and /openapi.json lists the 409.
   */
  quotas?: readonly QuotaName[];
  rest?: RestBinding;
  /** Omit (or false) for operations that are REST-only. */
  mcp?: McpBinding | false;
  /**
   * Deprecated paths or request shapes this entry still accepts (declared in
   * tools/deprecations.ts). Responses that used one carry Deprecation, Sunset
   * and Link headers; /openapi.json lists them under x-api-versioning.
   */
  deprecations?: readonly DeprecationName[];
  /** Set by mcpTwin (tools/mcp-twin.ts): this MCP tool is generated from the REST entry `twin.of`. */
  twin?: TwinDeclaration;
  handler(input: z.output<I>, ctx: ToolContext): Promise<z.input<O>> | z.input<O>;
}

/** REST input field → MCP argument name; a nested object renames its own fields (and may leave some REST-only). */
export type TwinFields = { [restField: string]: string | { as: string; fields: TwinFields; restOnly?: readonly string[] } };

export interface TwinDeclaration {
  /** The REST entry this MCP tool is generated from. */
  of: string;
  fields: TwinFields;
  /** Top-level REST fields the MCP tool does not take. */
  restOnly: readonly string[];
  /** Arguments only the MCP tool takes. */
  mcpOnly: readonly string[];
  /** The MCP argument that carries the REST body's free-form fields, if any. */
  catchall?: string;
}

export type AnyTool = ToolDefinition<z.ZodType, z.ZodType>;

export function defineTool<I extends z.ZodType, O extends z.ZodType>(tool: ToolDefinition<I, O>): AnyTool {
  return tool as unknown as AnyTool;
}
