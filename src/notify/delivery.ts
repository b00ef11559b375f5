import { ServiceError } from '../errors.ts';
import { isEgressError } from '../net/egress-error.ts';
import type { EgressAllowList } from '../net/egress-policy.ts';
import { safeFetch, type SafeFetchResponse } from '../net/safe-fetch.ts';
import type { EgressSlot } from '../net/egress-slots.ts';
import { scrubSecrets } from '../text/scrub-secrets.ts';

/**
 * One delivery to a notification provider, with retries. Every request goes
 * through the egress policy (safeFetch). 429 and 5xx are retried with
 * exponential backoff and jitter, waiting what the provider asks for when it
 * says (`Retry-After`, Discord's `retry_after`, Telegram's
 * `parameters.retry_after`), within a total time budget. Any other 4xx fails
 * at once with the provider's own message. No message carries a credential.
 *
 * Sending twice: a 429 or 5xx answer means the provider did not take the
 * message, so repeating it is safe. A request that fails without an answer
 * (timeout, reset) may have been taken: it is repeated only when the
 * provider deduplicates by idempotency key (`retryUnanswered`), else the
 * step fails rather than risk a second message.
 */

export interface ProviderRequest {
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
}

/** What the node's log row records about the delivery. */
export interface AttemptLog {
  attempts: number;
  /** HTTP status of the last answer; null when no attempt got one. */
  lastStatus: number | null;
  durationMs: number;
}

export interface DeliveryOptions {
  /** Provider name for messages, e.g. "Discord". */
  provider: string;
  allowList: EgressAllowList;
  /** Credential values: scrubbed from every message. */
  secrets: readonly unknown[];
  signal?: AbortSignal;
  /** Repeat a request that got no answer (only where the provider deduplicates by idempotency key). */
  retryUnanswered?: boolean;
  maxAttempts?: number;
  /** Total time for all attempts and waits. */
  budgetMs?: number;
  /** Time for one attempt. */
  attemptTimeoutMs?: number;
  /** Sent on a tenant's behalf: counted against its organization's and the process's open requests. */
  slot?: EgressSlot;
}

export interface Delivered {
  response: SafeFetchResponse;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  body: unknown;
  log: AttemptLog;
}

export const DELIVERY_DEFAULTS = { maxAttempts: 5, budgetMs: 60_000, attemptTimeoutMs: 15_000, baseDelayMs: 500, maxDelayMs: 10_000 } as const;
const MAX_RESPONSE_BYTES = 256 * 1024;

/** A delivery that did not succeed: 502 `notification_failed` with the attempt log; the message has no credential. */
export class DeliveryError extends ServiceError {
  constructor(
    message: string,
    readonly log: AttemptLog,
    provider: string,
  ) {
    super(502, 'notification_failed', message, { provider, ...log });
    this.name = 'DeliveryError';
  }
}

/** A DeliveryError whose message has the credential values scrubbed. */
export const deliveryError = (provider: string, message: string, log: AttemptLog, secrets: readonly unknown[] = []) =>
  new DeliveryError(scrubSecrets(message, secrets), log, provider);

/** The log of a delivery refused before any request. */
export const noAttempt = (): AttemptLog => ({ attempts: 0, lastStatus: null, durationMs: 0 });

export const isRetryableStatus = (status: number) => status === 429 || status >= 500;

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Seconds the provider asked to wait, from the header or the body; undefined when it did not say. */
export function retryAfterMs(res: SafeFetchResponse, body: unknown, now = Date.now()): number | undefined {
  const fromBody = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value * 1000 : undefined);
  if (body && typeof body === 'object') {
    const b = body as { retry_after?: unknown; parameters?: { retry_after?: unknown } };
    const asked = fromBody(b.retry_after) ?? fromBody(b.parameters?.retry_after);
    if (asked !== undefined) return asked;
  }
  const header = res.headers['retry-after']?.trim();
  if (!header) return undefined;
  if (/^\d+(\.\d+)?$/.test(header)) return Number(header) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff with full jitter between half and all of the step. */
export function backoffMs(attempt: number): number {
  const step = Math.min(DELIVERY_DEFAULTS.maxDelayMs, DELIVERY_DEFAULTS.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(step / 2 + Math.random() * (step / 2));
}

/** The provider's own words for a refusal, from the usual JSON shapes, else the text. */
export function providerMessage(res: SafeFetchResponse, body: unknown): string {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    const errors = Array.isArray(b.errors) ? (b.errors as { message?: unknown }[]) : [];
    const nested = b.error && typeof b.error === 'object' ? (b.error as { message?: unknown }).message : undefined;
    const candidates = [b.message, b.description, typeof b.error === 'string' ? b.error : nested, errors[0]?.message, b.detail];
    const found = candidates.find((c): c is string => typeof c === 'string' && c.trim() !== '');
    if (found) return found.slice(0, 500);
  }
  const text = res.body.toString('utf8').trim().slice(0, 300);
  return text || res.statusText || 'no message';
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Sends `request` until the provider answers 2xx; throws DeliveryError otherwise. */
export async function deliver(request: ProviderRequest, options: DeliveryOptions): Promise<Delivered> {
  const maxAttempts = options.maxAttempts ?? DELIVERY_DEFAULTS.maxAttempts;
  const budgetMs = options.budgetMs ?? DELIVERY_DEFAULTS.budgetMs;
  const started = Date.now();
  const log: AttemptLog = { attempts: 0, lastStatus: null, durationMs: 0 };
  const host = hostOf(request.url);
  const fail = (message: string): never => {
    log.durationMs = Date.now() - started;
    throw deliveryError(options.provider, message, { ...log }, options.secrets);
  };
  const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
  if (request.json !== undefined) headers['content-type'] = 'application/json';
  const body = request.json === undefined ? undefined : JSON.stringify(request.json);

  for (;;) {
    log.attempts++;
    const remaining = budgetMs - (Date.now() - started);
    let wait: number;
    let reason: string;
    try {
      const response = await safeFetch(request.url, {
        method: request.method,
        headers,
        body,
        timeoutMs: Math.max(1, Math.min(options.attemptTimeoutMs ?? DELIVERY_DEFAULTS.attemptTimeoutMs, remaining)),
        maxResponseBytes: MAX_RESPONSE_BYTES,
        // A provider redirect is not followed: the request carries credentials.
        maxRedirects: 0,
        signal: options.signal,
        allowList: options.allowList,
        slot: options.slot,
      });
      log.lastStatus = response.status;
      const parsed = parseJson(response.body);
      if (response.status >= 200 && response.status < 300) {
        log.durationMs = Date.now() - started;
        return { response, body: parsed, log: { ...log } };
      }
      const said = providerMessage(response, parsed);
      if (!isRetryableStatus(response.status)) fail(`${options.provider} refused the request (HTTP ${response.status}): ${said}`);
      reason = `HTTP ${response.status}: ${said}`;
      wait = retryAfterMs(response, parsed) ?? backoffMs(log.attempts);
    } catch (err) {
      if (err instanceof DeliveryError) throw err;
      if (!isEgressError(err)) throw err;
      // Cancelled run, refused address, bad URL: nothing to retry.
      const unanswered = err.kind === 'timeout' || err.kind === 'network';
      if (!unanswered) fail(`${options.provider} request to ${host} failed: ${err.message}`);
      // Refused connections never reached the provider; other failures may have, after it took the message.
      const neverSent = err.details.code === 'ECONNREFUSED' || err.details.code === 'ENOTFOUND' || err.details.code === 'EAI_AGAIN';
      if (!neverSent && !options.retryUnanswered) {
        fail(
          `${options.provider} request to ${host} got no answer (${err.message}); not repeated, since ${options.provider} may have taken the message and has no idempotency key.`,
        );
      }
      reason = err.message;
      wait = backoffMs(log.attempts);
    }
    if (log.attempts >= maxAttempts) fail(`${options.provider} did not accept the message after ${log.attempts} attempts (last: ${reason}).`);
    if (Date.now() - started + wait > budgetMs) {
      fail(`${options.provider} did not accept the message within ${Math.round(budgetMs / 1000)} s (${log.attempts} attempts; last: ${reason}).`);
    }
    try {
      await sleep(wait, options.signal);
    } catch {
      fail(`${options.provider} delivery was cancelled after ${log.attempts} attempts.`);
    }
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the provider';
  }
}

/** `base` + `path`, where base may carry a path prefix (a relay): `https://relay/x` + `/emails`. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path.startsWith('/') ? path : `/${path}`}`;
}

/**
 * A webhook URL the user pasted (Discord, Slack) sent to `apiBaseUrl`
 * instead of its own origin: the path is kept, so a relay gets the same
 * path under its prefix. Without apiBaseUrl the URL is used as given.
 */
export function rebase(url: string, apiBaseUrl: string | undefined): string {
  if (!apiBaseUrl) return url;
  const parsed = new URL(url);
  return joinUrl(apiBaseUrl, `${parsed.pathname}${parsed.search}`);
}
