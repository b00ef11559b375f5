import { answerIdOf, envelopeProblem } from '../mcp/envelope.ts';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { AnyTool, Principal, ToolContext } from '../../tools/define.ts';
import {
  allowsBatching,
  answerMcpPost,
  declaredProtocolVersion,
  FIRST_VERSION_WITHOUT_BATCHING,
  MAX_BATCH_MESSAGES,
  type McpServerInfo,
  type McpToolSet,
} from '../mcp/sdk.ts';
import { createToolSet } from '../mcp/toolset.ts';
import { answerFast } from '../mcp/fast-path.ts';
import { acceptsMppCharge, withMppErrorForm } from '../mcp/payment-errors.ts';
import { rateLimitedError, rateLimitHeaders, type RateLimitDecision, type RateLimiter } from '../guards/rate-limit.ts';
import type { RateLimitName } from '../config.ts';
import { unauthorized } from '../../tools/authorize.ts';
import { scopeChallenge } from './mcp-scope-challenge.ts';
import { isServiceError } from '../errors.ts';
import { jsonBody } from './json-body.ts';
import { onlyUnder } from './path-gate.ts';
import type { OriginPolicy } from './origins.ts';

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

type Message = { id?: unknown; method?: unknown; params?: { _meta?: { progressToken?: unknown } } } | null;
const asMessage = (value: unknown): Message => (value && typeof value === 'object' ? (value as Message) : null);

/**
 * Stream (SSE) only when it buys something: the client accepts event streams
 * and asked for progress on a call. Everything else is a plain JSON answer,
 * which is cheaper. Batches are always answered as one JSON array.
 */
const wantsStream = (req: Request) =>
  String(req.headers.accept ?? '').includes('text/event-stream') && asMessage(req.body)?.params?._meta?.progressToken !== undefined;

const idOf = (message: unknown) => {
  const m = asMessage(message);
  return m && 'id' in m ? m.id : null;
};

/** The JSON-RPC answer to a message refused by a rate limit. */
/** A limit one message was counted against, and the verdict. */
interface Refusal {
  name: RateLimitName;
  decision: RateLimitDecision;
}

/** The JSON-RPC form of the one 429 (rateLimitedError): its body rides in `data`. */
const rateLimited = (id: unknown, refusal: Refusal) => {
  const error = rateLimitedError(refusal.name, refusal.decision);
  return { jsonrpc: '2.0' as const, id, error: { code: MCP_RATE_LIMITED, message: error.message, data: error.toBody() } };
};

/** `?login`, `?login=1|true|yes`: the caller wants to authenticate; `?login=false` does not. */
const wantsLogin = (value: unknown) => typeof value === 'string' && ['', '1', 'true', 'yes'].includes(value.toLowerCase());

export interface McpRouteDeps {
  path: string;
  info: McpServerInfo;
  registry: readonly AnyTool[];
  rateLimiter: RateLimiter;
  baseUrl: string;
  /** The protected-resource metadata URL for a request path (a 401's `resource_metadata`). */
  resourceMetadataUrl(path: string): string;
  bodyLimitBytes: number;
  /** Browser origins allowed to call (a request without `Origin` is no browser's and passes). */
  origins: OriginPolicy;
  contextFor(req: Request, res: Response): ToolContext;
  /** Answer GET/DELETE with 405 (false where another route serves GET on the same path). */
  refuseOtherMethods?: boolean;
  /** A server of its own for the request (the per-workflow servers at /mcp/w/:slug); the registry's tools otherwise. */
  serverFor?(req: Request, res: Response, principal: Principal | null): Promise<{ info: McpServerInfo; tools: McpToolSet }>;
  /**
   * Answer single JSON (not streamed) messages without building the SDK's server and transport
   * (src/mcp/fast-path.ts); default true. False serves every POST through the SDK: the
   * parity test (test/mcp-fast-path.test.ts) and the benchmark compare the two.
   */
  fastPath?: boolean;
}

export function mcpRouter(deps: McpRouteDeps): RequestHandler {
  const router = Router();
  // Other paths skip this router: everything it serves is under its path up to the first parameter.
  const gated = onlyUnder([deps.path.split(':')[0]!], router);
  const parseJson = jsonBody(deps.bodyLimitBytes);

  /**
   * The limit one message counts against, as if it came alone: every message
   * of an organization, and an anonymous caller's tools/call per IP.
   */
  const consumeFor = async (req: Request, principal: Principal | null, message: unknown): Promise<Refusal | undefined> => {
    // With limits off nothing is counted or sent, and the key (an anonymous caller's IP) need not be resolved.
    if (!deps.rateLimiter.enabled) return undefined;
    const name: RateLimitName | undefined = principal ? 'mcpPerOrganization' : asMessage(message)?.method === 'tools/call' ? 'mcpPublicCallsPerIp' : undefined;
    if (!name) return undefined;
    return { name, decision: await deps.rateLimiter.consume(name, principal ? principal.organizationId : (req.ip ?? 'unknown')) };
  };

  const fastPath = deps.fastPath !== false;

  /** The server a request speaks to: its info and tools. */
  const serverOf = async (req: Request, res: Response, principal: Principal | null) => {
    const { info, tools } = deps.serverFor
      ? await deps.serverFor(req, res, principal)
      : { info: deps.info, tools: createToolSet(deps.registry, principal, () => deps.contextFor(req, res)) };
    // Callers announcing MPP (Accept-Payment) get payment challenges as JSON-RPC -32042; others as isError results.
    return { info, tools: acceptsMppCharge(req.get('accept-payment')) ? withMppErrorForm(tools) : tools };
  };

  const answer = async (req: Request, res: Response, principal: Principal | null, body: unknown, streaming: boolean) => {
    const { info, tools } = await serverOf(req, res, principal);
    return answerMcpPost(info, tools, toWebRequest(req, deps.baseUrl), body, streaming);
  };

  /** One message: the fast path where it answers (plain JSON), the SDK's server and transport otherwise. */
  const answerOne = async (req: Request, res: Response, principal: Principal | null) => {
    const streaming = wantsStream(req);
    if (!fastPath || streaming) return sendWebResponse(res, await answer(req, res, principal, req.body, streaming));
    const { info, tools } = await serverOf(req, res, principal);
    const fast = await answerFast(info, tools, req.body, { contentType: req.get('content-type'), protocolVersion: req.get('mcp-protocol-version') });
    if (!fast) return sendWebResponse(res, await answerMcpPost(info, tools, toWebRequest(req, deps.baseUrl), req.body, false));
    res.status(fast.status);
    if (fast.body === undefined) return res.end();
    res.setHeader('Content-Type', 'application/json');
    res.end(fast.body);
  };

  /**
   * A JSON-RPC batch. Protocol 2025-06-18 removed batching, so a batch that
   * declares that version or a later one is refused whole. Older versions
   * get their batch, with every message counted against the limits as if
   * sent alone: the messages over the limit are answered -32029, the rest run.
   */
  const answerBatch = async (req: Request, res: Response, principal: Principal | null, messages: unknown[]) => {
    const version = declaredProtocolVersion(req.get('mcp-protocol-version'), messages);
    if (!allowsBatching(version)) {
      return jsonRpcError(
        res,
        400,
        -32600,
        `Invalid Request: JSON-RPC batches are not part of MCP protocol version ${version} (removed in ${FIRST_VERSION_WITHOUT_BATCHING}); send one message per POST.`,
      );
    }
    if (messages.length === 0) return jsonRpcError(res, 400, -32600, 'Invalid Request: the batch is empty.');
    // Before counting: the transport refuses larger batches whole, and counting thousands would cost more than refusing.
    if (messages.length > MAX_BATCH_MESSAGES) return jsonRpcError(res, 400, -32600, `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages.`);
    for (const [index, message] of messages.entries()) {
      const problem = envelopeProblem(message);
      if (problem) return jsonRpcError(res, 400, -32600, `Invalid Request: message ${index} of the batch: ${problem}.`);
    }
    if (messages.length > 1 && messages.some((m) => asMessage(m)?.method === 'initialize')) {
      return jsonRpcError(res, 400, -32600, 'Invalid Request: initialize must be sent alone, not in a batch; send it first, then the other messages.');
    }

    const forwarded: unknown[] = [];
    const refused: ReturnType<typeof rateLimited>[] = [];
    let last: RateLimitDecision | undefined;
    let refusal: RateLimitDecision | undefined;
    for (const message of messages) {
      const counted = await consumeFor(req, principal, message);
      if (counted) last = counted.decision;
      if (!counted || counted.decision.allowed) forwarded.push(message);
      else {
        refusal = counted.decision;
        // A refused notification has nobody to answer.
        if (idOf(message) !== null) refused.push(rateLimited(idOf(message), counted));
      }
    }
    if (last && deps.rateLimiter.enabled) res.set(rateLimitHeaders(last));
    const response = forwarded.length > 0 ? await answer(req, res, principal, forwarded, false) : undefined;
    if (!refusal) {
      // A batch's answer is an array, even of one (the transport answers a batch of one with a bare object).
      if (response!.status !== 200) return sendWebResponse(res, response!);
      const answered: unknown = await response!.json();
      response!.headers.forEach((value, name) => name !== 'content-length' && res.setHeader(name, value));
      return res.status(200).json(Array.isArray(answered) ? answered : [answered]);
    }

    // The transport refused the batch whole (a malformed message): that answer stands.
    if (response && response.status !== 200 && response.status !== 202) return sendWebResponse(res, response);
    const answered: unknown = response?.status === 200 ? await response.json() : [];
    const answers = [...(Array.isArray(answered) ? answered : [answered]), ...refused];
    res.setHeader('Retry-After', String(refusal.resetSeconds));
    // Nothing ran: the whole POST is the 429 a single refused call gets.
    res.status(forwarded.some((m) => idOf(m) !== null) ? 200 : 429).json(answers);
  };

  /** Origin check, then the body: before either, nothing is read or counted. */
  const admit = (req: Request, res: Response, next: (error?: unknown) => void) => {
    // Before the body is read or a rate limit spent: a page on another origin must not drive this endpoint (DNS rebinding).
    const origin = req.headers.origin;
    if (origin !== undefined && !deps.origins.allows(origin)) {
      return jsonRpcError(
        res,
        403,
        -32000,
        `Forbidden: requests from origin ${origin} are not allowed. The operator lists browser origins in FLOWGATE_ALLOWED_ORIGINS.`,
        null,
        {
          code: 'origin_not_allowed',
        },
      );
    }
    parseJson(req, res, (error?: unknown) => {
      if (!error) return next();
      if (res.headersSent) return; // the request timed out and was answered already
      if (isServiceError(error)) return jsonRpcError(res, error.status, -32700, `Parse error: ${error.message}`, null, error.toBody());
      const tooLarge = (error as { type?: string }).type === 'entity.too.large';
      return jsonRpcError(
        res,
        tooLarge ? 413 : 400,
        tooLarge ? -32600 : -32700,
        tooLarge ? 'Request body too large' : 'Parse error: the body is not valid JSON',
      );
    });
  };

  const serve = async (req: Request, res: Response, next: (error?: unknown) => void) => {
    try {
      const principal: Principal | null = req.principal;
      if (principal?.kind === 'user_key') {
        // Webhook keys start webhook triggers and nothing else; they are no MCP credential.
        return next(unauthorized(deps.resourceMetadataUrl(req.path), 'wfb_ webhook keys cannot be used for MCP; use an organization key (svc_...).'));
      }
      // `?login`: the client asks to sign in. Anonymous callers are otherwise served the public tools with 200, so a client
      // that starts OAuth only on a 401 would never do so; this URL answers them the challenge instead.
      if (!principal && wantsLogin(req.query.login)) {
        return next(
          unauthorized(
            deps.resourceMetadataUrl(req.path),
            'Sign-in requested (?login): authorize with OAuth (see the resource_metadata of WWW-Authenticate) or send an organization API key.',
          ),
        );
      }
      if (Array.isArray(req.body)) return await answerBatch(req, res, principal, req.body);
      const problem = envelopeProblem(req.body);
      if (problem) return jsonRpcError(res, 400, -32600, `Invalid Request: ${problem}.`, answerIdOf(req.body));

      const counted = await consumeFor(req, principal, req.body);
      if (counted && deps.rateLimiter.enabled) res.set(rateLimitHeaders(counted.decision));
      if (counted && !counted.decision.allowed) {
        res.setHeader('Retry-After', String(counted.decision.resetSeconds));
        return res.status(429).json(rateLimited(idOf(req.body), counted));
      }
      // The registry's server only: a per-workflow server has its one tool, whose scope its own route checks.
      const challenge = deps.serverFor ? undefined : scopeChallenge(deps.registry, principal, req.body, deps.resourceMetadataUrl(req.path));
      if (challenge) {
        res.setHeader('WWW-Authenticate', challenge.header);
        return jsonRpcError(
          res,
          403,
          -32000,
          `Forbidden: this tool needs scope ${challenge.required}; the access token has ${challenge.granted}. Authorize again asking for scope ${challenge.required} (see WWW-Authenticate).`,
          idOf(req.body),
          { code: 'insufficient_scope', required_scope: challenge.required, granted_scope: challenge.granted },
        );
      }
      await answerOne(req, res, principal);
    } catch (error) {
      next(error);
    }
  };

  // One route per path, its methods told apart here: a route of its own per step cost a router pass each.
  router.all(deps.path, (req, res, next) => {
    if (req.method === 'POST') return admit(req, res, (error) => (error ? next(error) : void serve(req, res, next)));
    if (deps.refuseOtherMethods === false) return next();
    res.setHeader('Allow', 'POST, OPTIONS');
    jsonRpcError(res, 405, -32000, `Method ${req.method} not allowed: this MCP endpoint is stateless streamable HTTP; send JSON-RPC with POST.`);
  });
  return gated;
}
