import { advertisedBaseUrlPath, readAdvertisedBaseUrl } from '../advertised-base-url.ts';
import { loadConfig } from '../config.ts';
import { dataDirPrefix, UsageError } from './usage.ts';

/**
 * The client commands (`workflows list`, `run`, `executions logs`) are thin
 * HTTP clients of the running gateway's REST routes, which are generated from
 * the tool registry: the CLI never runs an engine of its own (a run admitted
 * by a short-lived process would be reaped when it exits).
 *
 * Operations are named by their registry tool name; their method and path
 * come from the gateway's own /openapi.json (operationId = tool name), so no
 * route is written down twice. (Importing tools/ instead would load the
 * engine into every CLI start.)
 */
export type CliOperation = 'list_workflows' | 'execute_workflow' | 'get_execution_status' | 'get_execution_logs';

interface Route {
  method: string;
  path: string;
}

const REQUEST_TIMEOUT_MS = 30_000;

/** The gateway refused a request, or could not be reached: one readable line, exit code 1. */
export class GatewayError extends Error {}

export interface GatewayClient {
  base: string;
  call<T>(operation: CliOperation, params?: Record<string, string>, body?: unknown): Promise<{ body: T; headers: Headers }>;
}

/** `--url`, else FLOWGATE_BASE_URL, else the URL a gateway on the data directory advertises. */
function resolveBaseUrl(url: string | undefined, env: NodeJS.ProcessEnv): { base: string; source: string } {
  const [raw, source] =
    url !== undefined ? [url, '--url'] : env.FLOWGATE_BASE_URL?.trim() ? [env.FLOWGATE_BASE_URL.trim(), 'FLOWGATE_BASE_URL'] : advertised(env);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new UsageError(`${source} must be the gateway's URL, such as http://localhost:3000 (got "${raw}")`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`${source} must be an http(s) URL (got "${raw}")`);
  return { base: parsed.href.replace(/\/+$/, ''), source };
}

function advertised(env: NodeJS.ProcessEnv): [string, string] {
  const { dataDir } = loadConfig(env);
  const url = readAdvertisedBaseUrl(dataDir);
  if (url) return [url, `the URL advertised in ${advertisedBaseUrlPath(dataDir)}`];
  throw new UsageError(
    `No gateway URL: pass --url URL, set FLOWGATE_BASE_URL, or start the gateway (\`flowgate serve\`) on the data directory ${dataDir} ` +
      `(FLOWGATE_DATA_DIR), which advertises its URL in ${advertisedBaseUrlPath(dataDir)} while it listens.`,
  );
}

function apiKey(env: NodeJS.ProcessEnv): string {
  const key = env.FLOWGATE_API_KEY?.trim();
  if (key) return key;
  let prefix = '';
  try {
    prefix = dataDirPrefix(loadConfig(env).dataDir);
  } catch {
    // A bad configuration is reported by the command that needs it; the advice stands without the prefix.
  }
  throw new UsageError(
    `FLOWGATE_API_KEY is not set. These commands call the running gateway with an organization key: create one with ` +
      `\`${prefix}npx flowgate keys create --name NAME\` and export it as FLOWGATE_API_KEY.`,
  );
}

/** Why fetch failed, in a word the user can act on (ECONNREFUSED, a timeout, ...). */
function networkCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if ((error as Error).name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** The gateway's `{error, code}` body as one line. */
function describeFailure(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; code?: unknown };
    if (typeof body.error === 'string') return `${body.error}${typeof body.code === 'string' ? ` (${body.code}, HTTP ${status})` : ` (HTTP ${status})`}`;
  } catch {
    // not JSON: not a Flowgate answer
  }
  return `HTTP ${status} with no Flowgate error body; is this a Flowgate gateway?`;
}

export function connect(options: { url?: string }, env: NodeJS.ProcessEnv = process.env): GatewayClient {
  const { base, source } = resolveBaseUrl(options.url, env);
  const key = apiKey(env);
  const unreachable = (error: unknown) => new GatewayError(`cannot reach the gateway at ${base} (${source}): ${networkCause(error)}. Is it running?`);

  let routes: Promise<Map<string, Route>> | undefined;
  /** operationId → route, read once from the gateway's OpenAPI description. */
  const routeOf = async (operation: CliOperation): Promise<Route> => {
    routes ??= (async () => {
      let document: { paths?: Record<string, Record<string, { operationId?: string }>> };
      try {
        const response = await fetch(`${base}/openapi.json`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        document = (await response.json()) as typeof document;
      } catch (error) {
        throw error instanceof SyntaxError ? new GatewayError(`${base}/openapi.json is not JSON; is ${base} a Flowgate gateway?`) : unreachable(error);
      }
      const map = new Map<string, Route>();
      for (const [path, operations] of Object.entries(document.paths ?? {})) {
        for (const [method, op] of Object.entries(operations)) if (op.operationId) map.set(op.operationId, { method: method.toUpperCase(), path });
      }
      return map;
    })();
    const route = (await routes).get(operation);
    if (!route) throw new GatewayError(`the gateway at ${base} does not offer ${operation}; is it a Flowgate gateway of this version?`);
    return route;
  };

  return {
    base,
    async call<T>(operation: CliOperation, params: Record<string, string> = {}, body?: unknown) {
      const { method, path } = await routeOf(operation);
      const url = base + path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'application/json' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      let response: Response;
      let text: string;
      try {
        response = await fetch(url, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        text = await response.text();
      } catch (error) {
        throw unreachable(error);
      }
      if (!response.ok) throw new GatewayError(describeFailure(response.status, text));
      try {
        return { body: JSON.parse(text) as T, headers: response.headers };
      } catch {
        throw new GatewayError(`${method} ${url} answered with something other than JSON; is ${base} a Flowgate gateway?`);
      }
    },
  };
}
