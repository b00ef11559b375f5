import { isEgressError } from '../../net/egress-error.ts';
import type { EgressAllowList } from '../../net/egress-policy.ts';
import { safeFetch, type SafeFetchResponse } from '../../net/safe-fetch.ts';
import type { EgressSlot } from '../../net/egress-slots.ts';
import { NodeError, type NodeRunContext, type NodeRunner } from './types.ts';

/**
 * `HTTP Request`: calls an http(s) endpoint through the egress-checked client.
 * Output `{success, status, statusText, headers, data, url}` where `data` is
 * the response body (parsed JSON, else text), so `{{@n:HTTP Request.data.items}}`
 * reads a field of the body. A non-2xx answer is `success: false` with `error`
 * and still carries status, headers and data; policy, timeout, size and
 * network failures throw NodeError.
 */

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
export const HTTP_TIMEOUT_MS = { default: 10_000, min: 1, max: 30_000 } as const;
export const HTTP_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

const NO_BODY_METHODS = new Set(['GET', 'HEAD']);

export const httpRequestRunner: NodeRunner = async (config, ctx) => {
  const endpoint = requireUrl(config.endpoint, 'endpoint');
  const method = parseMethod(config.httpMethod, 'httpMethod', HTTP_METHODS, 'GET');
  const headers = parseHeaders(config.httpHeaders, 'httpHeaders');
  // A body on GET/HEAD is dropped rather than failing the run: editors often leave an empty one behind.
  const body = NO_BODY_METHODS.has(method) ? undefined : encodeBody(config.httpBody, headers);
  const res = await fetchForNode(ctx, endpoint, { method, headers, body, timeoutMs: parseTimeout(config.timeout) });
  const data = decodeBody(res.body, res.headers['content-type']);
  const result = { status: res.status, statusText: res.statusText, headers: res.headers, data, url: res.url };
  if (isOk(res.status)) return { success: true, ...result };
  return { success: false, error: statusError(res), ...result };
};

// ---- Shared with send-webhook ----------------------------------------------

/** The operator's allow list (FLOWGATE_HTTP_ALLOW_HOSTS), parsed once with the configuration. */
export function allowListFor(ctx: NodeRunContext): EgressAllowList {
  return ctx.services.config.httpAllowHosts;
}

export function requireUrl(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new NodeError(`${field} is required: the http(s) URL to call, e.g. https://api.example.com/path`, { field });
  }
  return value.trim();
}

export function parseMethod(value: unknown, field: string, allowed: readonly string[], fallback: string): string {
  if (value === undefined || value === null || value === '') return fallback;
  const method = typeof value === 'string' ? value.trim().toUpperCase() : '';
  if (!allowed.includes(method)) {
    throw new NodeError(`${field} ${JSON.stringify(value)} is not supported: use one of ${allowed.join(', ')}`, { field, received: value });
  }
  return method;
}

/** Headers given as a JSON object string (what editors store) or as an object; names lower-cased. */
export function parseHeaders(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) return {};
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      // Not the parser's message: it quotes the text around the error, often a credential.
      const position = /at position \d+/.exec((err as Error).message)?.[0];
      throw new NodeError(`${field} is not valid JSON${position ? ` (${position})` : ''}: give an object such as {"Authorization":"Bearer ..."}`, { field });
    }
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new NodeError(`${field} must be a JSON object of header names to values, e.g. {"Authorization":"Bearer ..."}`, { field });
  }
  const headers: Record<string, string> = {};
  for (const [name, raw] of Object.entries(parsed)) {
    if (raw === undefined || raw === null) continue;
    if (!['string', 'number', 'boolean'].includes(typeof raw)) {
      throw new NodeError(`${field}.${name} must be a string, got ${Array.isArray(raw) ? 'an array' : typeof raw}`, { field });
    }
    headers[name.toLowerCase()] = String(raw);
  }
  return headers;
}

/**
 * A string body is sent as-is; any other value as JSON. Sets content-type
 * when none was given: JSON when the body parses as JSON, else plain text.
 */
export function encodeBody(value: unknown, headers: Record<string, string>): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (!headers['content-type']) headers['content-type'] = isJsonText(text) ? 'application/json' : 'text/plain; charset=utf-8';
  return text;
}

function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export function parseTimeout(value: unknown): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  if (!Number.isFinite(n)) return HTTP_TIMEOUT_MS.default;
  return Math.min(HTTP_TIMEOUT_MS.max, Math.max(HTTP_TIMEOUT_MS.min, Math.round(n)));
}

/** A step's requests count against its organization's and the process's open requests (src/net/egress-slots.ts). */
export const egressSlotFor = (ctx: NodeRunContext): EgressSlot => ({ slots: ctx.services.egressSlots, organizationId: ctx.organizationId });

/** safeFetch with the run's signal, allow list and slot; egress failures become the node's error. */
export async function fetchForNode(
  ctx: NodeRunContext,
  url: string,
  init: { method: string; headers: Record<string, string>; body: string | undefined; timeoutMs: number },
): Promise<SafeFetchResponse> {
  try {
    return await safeFetch(url, {
      ...init,
      maxResponseBytes: HTTP_MAX_RESPONSE_BYTES,
      signal: ctx.signal,
      allowList: allowListFor(ctx),
      slot: egressSlotFor(ctx),
    });
  } catch (err) {
    if (isEgressError(err)) throw new NodeError(err.message, { kind: err.kind, ...err.details });
    throw err;
  }
}

/** The body as parsed JSON when it is JSON (by content-type, or by shape when none is given), else text. */
export function decodeBody(body: Buffer, contentType: string | undefined): unknown {
  const text = decodeText(body, contentType);
  if (text === '') return '';
  const declaredJson = contentType !== undefined && /[/+]json\b/i.test(contentType);
  if (declaredJson || (!contentType && /^\s*[[{]/.test(text))) {
    try {
      return JSON.parse(text);
    } catch {
      // Mislabelled or truncated JSON: the text is still useful to the agent.
    }
  }
  return text;
}

function decodeText(body: Buffer, contentType: string | undefined): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? '')?.[1];
  if (charset) {
    try {
      return new TextDecoder(charset).decode(body);
    } catch {
      // Unknown label: fall back to UTF-8.
    }
  }
  return new TextDecoder().decode(body);
}

export const isOk = (status: number) => status >= 200 && status < 300;

export function statusError(res: SafeFetchResponse): string {
  return `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''} from ${new URL(res.url).host}`;
}
