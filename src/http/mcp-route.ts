import express, { Router, type Request, type Response } from 'express';
import type { AnyTool, Principal, ToolContext } from '../../tools/define.ts';
import { answerMcpPost, type McpServerInfo, type McpToolSet } from '../mcp/sdk.ts';
import { createToolSet } from '../mcp/toolset.ts';
import { acceptsMppCharge, withMppErrorForm } from '../mcp/payment-errors.ts';
import { rateLimitHeaders, type RateLimiter } from '../guards/rate-limit.ts';
import { unauthorized } from '../../tools/authorize.ts';

/**
 * Streamable HTTP at /mcp, stateless: POST only (GET/DELETE answer 405).
 * Anonymous callers get the public tools; an organization key gets its
 * tools filtered by scope.
 */

export const MCP_RATE_LIMITED = -32029;

const jsonRpcError = (res: Response, status: number, code: number, message: string, id: unknown = null, data?: unknown) =>
  res.status(status).json({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });

function toWebRequest(req: Request, baseUrl: string): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  // Many MCP clients send only `Accept: application/json`; our responses are JSON either way.
  const accept = headers.get('accept') ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    headers.set('accept', 'application/json, text/event-stream');
  }
  return new globalThis.Request(new URL(req.originalUrl, baseUrl), { method: req.method, headers });
}

async function sendWebResponse(res: Response, response: globalThis.Response) {
  res.status(response.status);
  response.headers.forEach((value, name) => res.setHeader(name, value));
  if (!response.body) return res.end();
  // Stream, so server-sent progress notifications reach the client as they happen.
  res.flushHeaders();
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    res.write(value);
  }
  res.end();
}

/**
 * Stream (SSE) only when it buys something: the client accepts event streams
 * and asked for progress on a call. Everything else is a plain JSON answer,
 * which is cheaper.
 */
const wantsStream = (req: Request) =>
  String(req.headers.accept ?? '').includes('text/event-stream') &&
  (Array.isArray(req.body) ? req.body : [req.body]).some(
    (m) => m && typeof m === 'object' && (m as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken !== undefined,
  );

const isToolCall = (body: unknown) =>
  (Array.isArray(body) ? body : [body]).some((m) => m && typeof m === 'object' && (m as { method?: unknown }).method === 'tools/call');

const firstId = (body: unknown) => {
  const message = Array.isArray(body) ? body[0] : body;
  return message && typeof message === 'object' && 'id' in message ? (message as { id: unknown }).id : null;
};

export interface McpRouteDeps {
  path: string;
  info: McpServerInfo;
  registry: readonly AnyTool[];
  rateLimiter: RateLimiter;
  baseUrl: string;
  resourceMetadataUrl: string;
  bodyLimitBytes: number;
  contextFor(req: Request, res: Response): ToolContext;
  /** Answer GET/DELETE with 405 (false where another route serves GET on the same path). */
  refuseOtherMethods?: boolean;
  /** A server of its own for the request (the per-workflow servers at /mcp/w/:slug); the registry's tools otherwise. */
  serverFor?(req: Request, res: Response, principal: Principal | null): Promise<{ info: McpServerInfo; tools: McpToolSet }>;
}

export function mcpRouter(deps: McpRouteDeps): Router {
  const router = Router();
  const parseJson = express.json({ limit: deps.bodyLimitBytes, type: ['application/json', 'application/*+json'] });

  router.post(deps.path, (req, res, next) => {
    parseJson(req, res, (error?: unknown) => {
      if (error) {
        const tooLarge = (error as { type?: string }).type === 'entity.too.large';
        return jsonRpcError(res, tooLarge ? 413 : 400, tooLarge ? -32600 : -32700, tooLarge ? 'Request body too large' : 'Parse error: the body is not valid JSON');
      }
      next();
    });
  });

  router.post(deps.path, async (req, res, next) => {
    try {
      const principal: Principal | null = req.principal;
      if (principal?.kind === 'user_key') {
        // Webhook keys start webhook triggers and nothing else; they are no MCP credential.
        return next(unauthorized(deps.resourceMetadataUrl, 'wfb_ webhook keys cannot be used for MCP; use an organization key (svc_...).'));
      }
      const decision = principal
        ? await deps.rateLimiter.consume('mcpPerOrganization', principal.organizationId)
        : isToolCall(req.body)
          ? await deps.rateLimiter.consume('mcpPublicCallsPerIp', req.ip ?? 'unknown')
          : undefined;
      if (decision && deps.rateLimiter.enabled) res.set(rateLimitHeaders(decision));
      if (decision && !decision.allowed) {
        res.setHeader('Retry-After', String(decision.resetSeconds));
        return jsonRpcError(res, 429, MCP_RATE_LIMITED, `Rate limit exceeded; retry after ${decision.resetSeconds} seconds.`, firstId(req.body), {
          code: 'rate_limited',
          retryAfter: decision.resetSeconds,
        });
      }

      const { info, tools } = deps.serverFor
        ? await deps.serverFor(req, res, principal)
        : { info: deps.info, tools: createToolSet(deps.registry, principal, () => deps.contextFor(req, res)) };
      // Callers announcing MPP (Accept-Payment) get payment challenges as JSON-RPC -32042; others as isError results.
      const answering = acceptsMppCharge(req.get('accept-payment')) ? withMppErrorForm(tools) : tools;
      const response = await answerMcpPost(info, answering, toWebRequest(req, deps.baseUrl), req.body, wantsStream(req));
      await sendWebResponse(res, response);
    } catch (error) {
      next(error);
    }
  });

  if (deps.refuseOtherMethods === false) return router;
  router.all(deps.path, (req, res) => {
    res.setHeader('Allow', 'POST, OPTIONS');
    jsonRpcError(res, 405, -32000, `Method ${req.method} not allowed: this MCP endpoint is stateless streamable HTTP; send JSON-RPC with POST.`);
  });
  return router;
}
