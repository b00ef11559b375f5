import { Router, type Request, type Response } from 'express';
import type { AnyTool, HttpMethod, ToolContext } from '../../tools/define.ts';
import { invokeTool } from '../../tools/invoke.ts';
import { ServiceError } from '../errors.ts';

/** Mounts every registry entry that has a REST binding; nothing else defines routes. */

const BODY_METHODS: ReadonlySet<HttpMethod> = new Set(['POST', 'PUT', 'PATCH']);

const asRecord = (value: unknown): Record<string, unknown> => (value && typeof value === 'object' ? (value as Record<string, unknown>) : {});

function pick(source: Record<string, unknown>, keys: readonly string[]) {
  return Object.fromEntries(keys.filter((k) => k in source).map((k) => [k, source[k]]));
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Path params, query and body merged into the tool's one input object (path wins, then body). */
function collectInput(tool: AnyTool, req: Request): Record<string, unknown> {
  const method = tool.rest!.method;
  const query = asRecord(req.query);
  if (!BODY_METHODS.has(method)) return { ...query, ...req.params };

  let body: Record<string, unknown> = {};
  if (req.body === undefined) {
    if (hasBody(req)) {
      throw new ServiceError(415, 'unsupported_media_type', `Send the request body as JSON with Content-Type: application/json (got ${req.headers['content-type'] ?? 'no Content-Type'}).`);
    }
  } else if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) {
    throw new ServiceError(400, 'invalid_input', `The request body must be a JSON object, got ${Array.isArray(req.body) ? 'an array' : typeof req.body}.`);
  } else {
    body = req.body as Record<string, unknown>;
  }
  return { ...body, ...pick(query, tool.rest!.query ?? []), ...req.params };
}

/**
 * Literal segments must be matched before parameters at the same position
 * (`/api/workflows/public` before `/api/workflows/:workflowId`), whatever order
 * the registry lists them in.
 */
function bySpecificity(registry: readonly AnyTool[]): AnyTool[] {
  const rank = (path: string) => path.split('/').map((segment) => (segment.startsWith(':') ? '1' : '0')).join('');
  return registry.filter((t) => t.rest).sort((a, b) => rank(a.rest!.path).localeCompare(rank(b.rest!.path)));
}

export function restRouter(registry: readonly AnyTool[], contextFor: (req: Request, res: Response) => ToolContext): Router {
  const router = Router();
  const methodsByPath = new Map<string, Set<HttpMethod>>();

  for (const tool of bySpecificity(registry)) {
    const rest = tool.rest;
    if (!rest) continue;
    methodsByPath.set(rest.path, (methodsByPath.get(rest.path) ?? new Set()).add(rest.method));
    const verb = rest.method.toLowerCase() as Lowercase<HttpMethod>;
    router[verb](rest.path, async (req, res, next) => {
      try {
        const output = await invokeTool(tool, collectInput(tool, req), contextFor(req, res));
        if (rest.cacheControl) res.setHeader('Cache-Control', rest.cacheControl);
        res.status((res.locals.status as number | undefined) ?? rest.status ?? 200).json(output);
      } catch (error) {
        next(error);
      }
    });
  }

  for (const [path, methods] of methodsByPath) {
    const allow = [...methods, ...(methods.has('GET') ? ['HEAD'] : []), 'OPTIONS'].join(', ');
    router.all(path, (req, res) => {
      res.setHeader('Allow', allow);
      res.status(405).json({ error: `Method ${req.method} is not allowed on ${path}; allowed: ${allow}.`, code: 'method_not_allowed' });
    });
  }
  return router;
}

/** Express `:param` paths as OpenAPI `{param}` templates. */
export const openApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
