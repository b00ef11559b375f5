import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { isCredentialName } from '../text/redact.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { EgressError } from './egress-error.ts';
import { policyLookup } from './egress-lookup.ts';
import { ALLOW_HOSTS_VARIABLE, EMPTY_ALLOW_LIST, egressVerdict, type EgressAllowList } from './egress-policy.ts';
import { EgressSlotWaitError, type EgressSlot } from './egress-slots.ts';

/**
 * Outbound HTTP for workflow steps, with SSRF protection. The address check
 * runs inside the socket's DNS lookup, so it judges the address actually
 * connected to (a host name re-resolving to 127.0.0.1 between a check and the
 * connect — DNS rebinding — is caught), and it runs again on every redirect hop.
 */

export interface SafeFetchOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Total time for connect, headers and body across all redirect hops. Default 10 s. */
  timeoutMs?: number;
  /** Largest (decoded) response body; larger responses fail with `too_large`. Default 5 MiB. */
  maxResponseBytes?: number;
  /** Redirects followed before failing with `redirects`. Default 5. */
  maxRedirects?: number;
  /** The caller's cancellation (e.g. the run's signal). */
  signal?: AbortSignal;
  /** Operator exceptions to the egress policy (FLOWGATE_HTTP_ALLOW_HOSTS). Default: none. */
  allowList?: EgressAllowList;
  /** A request on a tenant's behalf: held to its organization's and the process's caps on open requests (egress-slots.ts). */
  slot?: EgressSlot;
}

export interface SafeFetchResponse {
  status: number;
  statusText: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  /** The URL of the final hop. */
  url: string;
  redirects: number;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;
export const DEFAULT_MAX_REDIRECTS = 5;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Headers describing a body, dropped when a redirect turns the request into a GET. */
const BODY_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-location'];
/** Framing headers this client computes itself. */
const MANAGED_HEADERS = ['host', 'content-length', 'transfer-encoding', 'connection'];

interface Hop {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  /** The URL that redirected here, for messages. */
  from?: URL;
}

interface Limits {
  signal: AbortSignal;
  /** The EgressError for the current abort: timeout when the deadline fired, else aborted. */
  abortError(url: URL): EgressError;
  allowList: EgressAllowList;
  maxResponseBytes: number;
}

export async function safeFetch(input: string | URL, options: SafeFetchOptions = {}): Promise<SafeFetchResponse> {
  const timeoutMs = positive(options.timeoutMs, DEFAULT_TIMEOUT_MS);
  const maxResponseBytes = positive(options.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES);
  const maxRedirects = options.maxRedirects !== undefined && options.maxRedirects >= 0 ? Math.floor(options.maxRedirects) : DEFAULT_MAX_REDIRECTS;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  const limits: Limits = {
    signal,
    allowList: options.allowList ?? EMPTY_ALLOW_LIST,
    maxResponseBytes,
    abortError: (url) =>
      deadline.aborted
        ? new EgressError('timeout', `Request to ${url.host} timed out after ${timeoutMs} ms`, { url: shown(url), timeoutMs })
        : new EgressError('aborted', `Request to ${url.host} was cancelled`, { url: shown(url) }),
  };

  let hop: Hop = {
    url: parseTarget(input),
    method: (options.method ?? 'GET').toUpperCase(),
    headers: requestHeaders(options.headers),
    body: options.body === undefined ? undefined : Buffer.from(options.body),
  };
  if (hop.method === 'CONNECT') throw new EgressError('invalid_request', 'The CONNECT method is not supported');

  if (!options.slot) return follow(hop, limits, maxRedirects);
  // The slot is held across every redirect hop and the body: the socket stays open until then.
  const release = await waitForSlot(options.slot, hop.url, limits);
  try {
    return await follow(hop, limits, maxRedirects);
  } finally {
    release();
  }
}

const CAP_VARIABLES = { organization: 'FLOWGATE_HTTP_CONCURRENCY_PER_ORG', process: 'FLOWGATE_HTTP_CONCURRENCY' } as const;

/** A slot of the organization's and the process's open requests; the wait ends with the request's own timeout or cancellation. */
async function waitForSlot({ slots, organizationId }: EgressSlot, url: URL, limits: Limits): Promise<() => void> {
  try {
    return await slots.acquire(organizationId, limits.signal);
  } catch (error) {
    if (!(error instanceof EgressSlotWaitError)) throw error;
    const cause = limits.abortError(url);
    const whose = error.cap === 'organization' ? "this organization's" : "this gateway's (shared by every organization)";
    throw new EgressError(
      cause.kind,
      `${cause.message} while it waited for a free outbound connection: ${whose} ${error.limit} requests were all open (${CAP_VARIABLES[error.cap]}). Fewer parallel requests (a lower For Each concurrency) or a faster target make room.`,
      { ...cause.details, waitingFor: error.cap, limit: error.limit },
    );
  }
}

async function follow(first: Hop, limits: Limits, maxRedirects: number): Promise<SafeFetchResponse> {
  let hop = first;
  for (let redirects = 0; ; redirects++) {
    const res = await send(hop, limits);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (REDIRECT_STATUSES.has(status) && location) {
      res.destroy(); // the redirect's own body is not needed
      if (redirects >= maxRedirects) {
        throw new EgressError('redirects', `Too many redirects from ${hop.url.host}: stopped after ${maxRedirects}`, { url: shown(hop.url), maxRedirects });
      }
      hop = nextHop(hop, status, location);
      continue;
    }
    const body = await readBody(res, hop.url, limits);
    return {
      status,
      statusText: res.statusMessage || http.STATUS_CODES[status] || '',
      headers: flattenHeaders(res.headers),
      body,
      url: withoutCredentials(hop.url),
      redirects,
    };
  }
}

/** A URL for messages and error details: no credentials, no query (it often carries API keys). */
const shown = (url: URL) => `${url.protocol}//${url.host}${url.pathname}`;

function withoutCredentials(url: URL): string {
  if (!url.username && !url.password) return url.href;
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

function positive(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value > 0 ? Math.max(1, Math.floor(value)) : fallback;
}

function parseTarget(input: string | URL, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(String(input), base);
  } catch {
    throw new EgressError(
      'invalid_url',
      `${JSON.stringify(String(input))} is not a valid URL: use an absolute http(s) URL such as https://api.example.com/path`,
      { url: String(input) },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressError('invalid_url', `Only http and https URLs are allowed, got ${url.protocol.replace(/:$/, '')}: in ${shown(url)}`, { url: shown(url) });
  }
  return url;
}

function requestHeaders(given: Record<string, string> | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'user-agent': `flowgate/${GATEWAY_VERSION}` };
  for (const [name, value] of Object.entries(given ?? {})) {
    const key = name.toLowerCase();
    if (!MANAGED_HEADERS.includes(key)) headers[key] = value;
  }
  return headers;
}

function nextHop(hop: Hop, status: number, location: string): Hop {
  let url: URL;
  try {
    url = parseTarget(location, hop.url);
  } catch (err) {
    const reason = err instanceof EgressError ? err.message : String(err);
    throw new EgressError('invalid_url', `Redirect from ${shown(hop.url)} has an unusable Location: ${reason}`, { url: shown(hop.url), location });
  }
  const headers = { ...hop.headers };
  let { method, body } = hop;
  // As fetch does: 303 becomes GET (HEAD stays HEAD), and so does a POST answered with 301/302.
  if ((status === 303 && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST')) {
    method = 'GET';
    body = undefined;
    for (const name of BODY_HEADERS) delete headers[name];
  }
  // Credentials must not follow a redirect to another origin: Authorization, Cookie, Proxy-Authorization and any header named like one (X-Api-Key, X-Custom-Auth...).
  if (url.origin !== hop.url.origin) for (const name of Object.keys(headers)) if (isCredentialName(name)) delete headers[name];
  return { url, method, headers, body, from: hop.url };
}

/**
 * A name is reported with the kind of address it resolved to, not the address: the tenant reading the message would
 * otherwise learn what the gateway's internal DNS answers for any name it likes (`db.internal` → 10.0.3.7).
 */
function blockedError(hop: Hop, ip: string, range: string): EgressError {
  const host = hop.url.hostname.replace(/^\[|\]$/g, '');
  const literal = host === ip;
  const target = literal ? `${ip} (${range})` : `${host} (resolves to a ${range} address)`;
  const via = hop.from ? `, reached by a redirect from ${shown(hop.from)}` : '';
  return new EgressError('blocked', `Refused to connect to ${target}${via}: add the host to ${ALLOW_HOSTS_VARIABLE} to allow it`, {
    url: shown(hop.url),
    host,
    ...(literal ? { address: ip } : {}),
    range,
    ...(hop.from ? { redirectedFrom: shown(hop.from) } : {}),
  });
}

/** The port a hop connects to: an allow-list entry may name one. */
const portOf = (url: URL) => Number(url.port) || (url.protocol === 'https:' ? 443 : 80);

function guardedLookup(hop: Hop, allowList: EgressAllowList): LookupFunction {
  return policyLookup(allowList, portOf(hop.url), {
    noAddress: (hostname) => new EgressError('network', `Could not resolve ${hostname}: no addresses`, { url: shown(hop.url) }),
    refused: (_hostname, ip, range) => blockedError(hop, ip, range),
  });
}

/** Sends one hop and resolves with the response head; the body is read separately. */
function send(hop: Hop, limits: Limits): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (limits.signal.aborted) return reject(limits.abortError(hop.url));
    const host = hop.url.hostname.replace(/^\[|\]$/g, '');
    // Node skips the lookup for a literal IP, so judge it here.
    if (isIP(host)) {
      const verdict = egressVerdict(host, host, portOf(hop.url), limits.allowList);
      if (!verdict.allowed) return reject(blockedError(hop, host, verdict.range));
    }
    const headers = { ...hop.headers };
    if (hop.body !== undefined) headers['content-length'] = String(hop.body.length);

    let req: http.ClientRequest;
    try {
      req = (hop.url.protocol === 'https:' ? https : http).request({
        protocol: hop.url.protocol,
        hostname: host,
        port: hop.url.port || undefined,
        path: `${hop.url.pathname}${hop.url.search}`,
        method: hop.method,
        headers,
        auth: hop.url.username ? `${decodeURIComponent(hop.url.username)}:${decodeURIComponent(hop.url.password)}` : undefined,
        lookup: guardedLookup(hop, limits.allowList),
        // A fresh connection per request: a pooled socket was checked against
        // whatever allow list its first request carried.
        agent: false,
      });
    } catch (err) {
      return reject(new EgressError('invalid_request', `Cannot send the request to ${hop.url.host}: ${(err as Error).message}`, { url: shown(hop.url) }));
    }

    const onAbort = () => req.destroy(limits.abortError(hop.url));
    limits.signal.addEventListener('abort', onAbort, { once: true });
    req.once('response', (res) => {
      limits.signal.removeEventListener('abort', onAbort);
      resolve(res);
    });
    // `on`, not `once`: the socket can still fail after the response head arrived.
    req.on('error', (err) => {
      limits.signal.removeEventListener('abort', onAbort);
      reject(networkError(err, hop.url));
    });
    req.end(hop.body);
  });
}

function networkError(err: unknown, url: URL): EgressError {
  if (err instanceof EgressError) return err;
  const e = err as NodeJS.ErrnoException;
  const host = url.host;
  const details = { url: shown(url), code: e.code };
  switch (e.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new EgressError('network', `Could not resolve ${url.hostname}: check the host name`, details);
    case 'ECONNREFUSED':
      return new EgressError('network', `Connection to ${host} was refused`, details);
    case 'ECONNRESET':
      return new EgressError('network', `Connection to ${host} was reset before the response completed`, details);
    default:
      return new EgressError('network', `Request to ${host} failed: ${e.message}`, details);
  }
}

function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined {
  // Lenient flushing, as browsers are, for servers that truncate the trailer.
  const lenient = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  switch ((encoding ?? '').trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip(lenient);
    case 'deflate':
      return zlib.createInflate(lenient);
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      return undefined;
  }
}

/** Reads the body, decoded, failing as soon as it passes the cap (counted after decoding: no zip bombs). */
function readBody(res: http.IncomingMessage, url: URL, limits: Limits): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const cap = limits.maxResponseBytes;
    const tooLarge = () =>
      new EgressError('too_large', `Response from ${url.host} is larger than the ${formatBytes(cap)} limit`, { url: shown(url), maxResponseBytes: cap });
    const decoder = decoderFor(res.headers['content-encoding']);
    const declared = Number(res.headers['content-length']);
    if (!decoder && Number.isFinite(declared) && declared > cap) {
      res.destroy();
      return reject(tooLarge());
    }

    let settled = false;
    const chunks: Buffer[] = [];
    let total = 0;
    const finish = (error?: EgressError) => {
      if (settled) return;
      settled = true;
      limits.signal.removeEventListener('abort', onAbort);
      if (error) {
        decoder?.destroy();
        res.destroy();
        reject(error);
      } else {
        resolve(Buffer.concat(chunks, total));
      }
    };
    const onAbort = () => finish(limits.abortError(url));
    limits.signal.addEventListener('abort', onAbort, { once: true });
    if (limits.signal.aborted) return onAbort();

    const stream: Readable = decoder
      ? pipeline(res, decoder, (err) => {
          if (err)
            finish(
              err instanceof EgressError
                ? err
                : new EgressError('network', `Could not decode the ${res.headers['content-encoding']} response from ${url.host}: ${err.message}`, {
                    url: shown(url),
                  }),
            );
        })
      : res;
    stream.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > cap) return finish(tooLarge());
      chunks.push(chunk);
    });
    stream.once('end', () => finish());
    stream.once('error', (err) => finish(networkError(err, url)));
    // A connection closed mid-body ends with 'close' and no 'end'.
    res.once('close', () => {
      if (!res.complete) finish(new EgressError('network', `Connection to ${url.host} closed before the response body was complete`, { url: shown(url) }));
    });
  });
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}
