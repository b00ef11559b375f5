import { sessionCookieName } from '../auth/session-cookie.ts';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';
import type { AnyTool } from '../../tools/define.ts';
import { inputJsonSchema, outputJsonSchema } from '../../tools/json-schema.ts';
import { DEPRECATIONS, describeDeprecations } from '../../tools/deprecations.ts';
import { QUOTA_VARIABLES, RATE_LIMIT_VARIABLES, type Config } from '../config.ts';
import { DESCRIPTION_VERSION, SUPPORTED_API_VERSIONS } from '../version.ts';
import { openApiPath, takesBody } from './rest.ts';
import { MAX_KEY_LENGTH } from '../guards/idempotency.ts';

/** /openapi.json, generated from the registry: every REST binding is one operation. */

type JsonSchema = { type?: string; properties?: Record<string, unknown>; required?: string[]; [k: string]: unknown };

const pathParams = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/** Groups operations by their first path segment after /api (chains, keys, user ...). */
const tagOf = (path: string) =>
  path
    .replace(/^\/api\//, '/')
    .split('/')
    .filter(Boolean)[0]
    ?.replace(/^:.*/, '') || 'gateway';

/** JSON Schema `deprecated: true` on request fields a declared deprecation names. */
function markDeprecatedFields(tool: AnyTool, properties: Record<string, unknown>): Record<string, unknown> {
  const fields: string[] = (tool.deprecations ?? [])
    .map((name) => DEPRECATIONS[name])
    .filter((d) => d.kind === 'request-field')
    .map((d) => d.subject);
  if (fields.length === 0) return properties;
  return Object.fromEntries(
    Object.entries(properties).map(([name, schema]) => [name, fields.includes(name) ? { ...(schema as object), deprecated: true } : schema]),
  );
}

const IDEMPOTENCY_KEY_HEADER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'The same key on every retry of one request, a new key per request: a retry within 24 hours answers the first result instead of acting again. Surrounding whitespace is trimmed.',
  schema: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH },
};

function operation(tool: AnyTool) {
  const rest = tool.rest!;
  const input = inputJsonSchema(tool) as JsonSchema;
  const properties = markDeprecatedFields(tool, input.properties ?? {});
  const required = new Set(input.required ?? []);
  const inPath = new Set(pathParams(rest.path));
  const deleteBody = rest.method === 'DELETE' ? (rest.body ?? []) : [];
  const bodyMethod = rest.method === 'POST' || rest.method === 'PUT' || rest.method === 'PATCH' || deleteBody.length > 0;
  const inQuery = new Set(
    bodyMethod && rest.method !== 'DELETE' ? (rest.query ?? []) : Object.keys(properties).filter((k) => !inPath.has(k) && !deleteBody.includes(k)),
  );

  const parameters = [
    ...[...inPath].map((name) => ({ name, in: 'path', required: true, schema: properties[name] ?? { type: 'string' } })),
    ...[...inQuery].filter((n) => n in properties).map((name) => ({ name, in: 'query', required: required.has(name), schema: properties[name] })),
    ...(rest.idempotencyKey ? [IDEMPOTENCY_KEY_HEADER] : []),
  ];

  const bodyNames = bodyMethod ? Object.keys(properties).filter((k) => !inPath.has(k) && !inQuery.has(k)) : [];
  const requestBody = bodyMethod
    ? {
        required: bodyNames.some((n) => required.has(n)),
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: Object.fromEntries(bodyNames.map((n) => [n, properties[n]])),
              required: bodyNames.filter((n) => required.has(n)),
              ...(input.additionalProperties === false ? { additionalProperties: false } : {}),
            },
          },
        },
      }
    : undefined;

  const isPublic = tool.scope === 'public';
  const responses: Record<string, unknown> = {
    [String(rest.status ?? 200)]: rest.eventStream
      ? { description: 'Server-sent events; each `data:` line is this JSON', content: { 'text/event-stream': { schema: outputJsonSchema(tool) } } }
      : { description: 'Success', content: { 'application/json': { schema: outputJsonSchema(tool) } } },
    '400': errorResponse('Invalid input: `code` is `invalid_input`, `issues` lists each field path and what was expected'),
    '429': errorResponse('Rate limited; wait `Retry-After` seconds'),
  };
  if (tool.quotas?.length) {
    responses['409'] = errorResponse(
      tool.quotas
        .map((name) => {
          const { noun, variable, remedy } = QUOTA_VARIABLES[name];
          return `\`quota_exceeded\` (\`resource\`: \`${name}\`): the organization already holds its bound of ${noun} (\`${variable}\`, see /docs/limits); to add another, ${remedy}`;
        })
        .join('. '),
    );
  }
  if (tool.scope === 'session') {
    responses['401'] = errorResponse('`session_required`: no signed-in browser session (API keys are not accepted here)');
    responses['403'] = errorResponse(
      '`invalid_origin` / `MISSING_OR_NULL_ORIGIN`: a state-changing cookie request from an untrusted origin; `not_admin_or_owner` where the operation needs that role',
    );
  } else if (!isPublic) {
    responses['401'] = errorResponse('Missing or invalid API key; `WWW-Authenticate` names the resource metadata');
    responses['403'] = errorResponse('`insufficient_scope`: the key lacks the required scope');
  }

  // The answers every operation of its shape can give, and those it declares: grouped by status, each code with its meaning.
  const codes: ErrorCode[] = [
    ...(/:[A-Za-z]/.test(rest.path) ? (['not_found'] as const) : []),
    ...(takesBody(rest) ? (['payload_too_large', 'unsupported_media_type'] as const) : []),
    ...(rest.idempotencyKey ? (['idempotency_conflict', 'idempotency_in_progress'] as const) : []),
    ...(rest.errors ?? []),
  ];
  for (const code of codes) {
    const status = String(ERROR_CODES[code].status);
    const line = `\`${code}\`: ${ERROR_CODES[code].meaning}`;
    const known = responses[status] as { description: string } | undefined;
    responses[status] = errorResponse(known ? `${known.description}. ${line}` : line);
  }

  const deprecatedPath = (tool.deprecations ?? []).some((name) => DEPRECATIONS[name].kind === 'path');
  return {
    operationId: tool.name,
    ...(deprecatedPath ? { deprecated: true } : {}),
    ...(tool.deprecations?.length ? { 'x-deprecations': [...tool.deprecations] } : {}),
    summary: rest.summary ?? tool.title,
    description: tool.description,
    tags: [tagOf(rest.path)],
    security: securityOf(tool.scope),
    'x-required-scope': tool.scope,
    ...(tool.mcp ? { 'x-mcp-tool': tool.name } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

/**
 * Who may call an operation: nobody needs a credential on public ones;
 * session-only ones take the sign-in cookie and nothing else; operations of a
 * key scope take an organization key, an OAuth access token of that scope or,
 * since sessions carry no scope, the cookie too.
 */
export function securityOf(scope: AnyTool['scope']): Record<string, string[]>[] {
  if (scope === 'public') return [];
  if (scope === 'session') return [{ sessionCookie: [] }];
  if (scope === 'internal' || scope === 'webhook') return [{ bearerAuth: [] }];
  return [{ bearerAuth: [] }, { oauth2: [scope] }, { sessionCookie: [] }];
}

export function buildOpenApi(registry: readonly AnyTool[], config: Config) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const tool of registry) {
    if (!tool.rest) continue;
    const path = openApiPath(tool.rest.path);
    (paths[path] ??= {})[tool.rest.method.toLowerCase()] = operation(tool);
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Flowgate API',
      version: DESCRIPTION_VERSION,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'MCP-server-first agent gateway for onchain workflow automation. Every operation here is also described as an MCP tool at /mcp where `x-mcp-tool` is set.',
    },
    servers: [{ url: config.baseUrl }],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Organization API key (`svc_...`) or OAuth access token (`fgat_...`). Keys may carry scope mcp:read, mcp:write or mcp:admin; a key with no scope is unrestricted.',
        },
        oauth2: {
          type: 'oauth2',
          description:
            'OAuth 2.1 for MCP clients and other interactive clients: dynamic client registration (or a Client ID Metadata Document URL as client_id), authorization code with PKCE S256, access tokens for 1 h bound to their resource (RFC 8707), rotating refresh tokens for 30 d. Metadata: /.well-known/oauth-authorization-server. See /docs/authentication.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${config.baseUrl}/authorize`,
              tokenUrl: `${config.baseUrl}/token`,
              refreshUrl: `${config.baseUrl}/token`,
              scopes: {
                'mcp:read': 'Read workflows, executions and chain data; run simulations',
                'mcp:write': 'mcp:read plus create and change workflows, start runs, broadcast',
                'mcp:admin': 'mcp:write plus organization administration (keys, members, connected clients)',
              },
            },
          },
        },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: sessionCookieName(config.baseUrl),
          description:
            'Browser session set by wallet sign-in (POST /api/auth/siwe/verify) or e-mail sign-in; HttpOnly, SameSite=Lax. State-changing cookie requests need a trusted Origin (or Referer). See /docs/authentication.',
        },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: { type: 'string', description: 'Human-readable message' },
            code: { type: 'string', description: 'Machine-readable code' },
            issues: {
              type: 'array',
              items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' }, code: { type: 'string' } } },
            },
          },
          additionalProperties: true,
        },
      },
    },
    'x-api-versioning': {
      current: SUPPORTED_API_VERSIONS.at(-1),
      supported: [...SUPPORTED_API_VERSIONS],
      header: 'Service-Version',
      policy:
        'Additive changes ship within a version; breaking changes ship as a new version. Deprecations are signalled with Deprecation, Sunset (at least 180 days later) and Link rel="deprecation" headers on every response that used the deprecated path or request shape.',
      documentation: `${config.baseUrl}/docs/versioning`,
      deprecations: describeDeprecations(registry).map((d) => ({ ...d, docs: `${config.baseUrl}${d.docs}` })),
    },
    'x-error-model': {
      shape: '{error: string, code?: string, ...details}',
      codes: ERROR_CODES,
      mcp: 'Tool failures resolve with isError: true and this JSON in content[0].text.',
    },
    'x-rate-limits': Object.entries(RATE_LIMIT_VARIABLES).map(([name, spec]) => ({
      name,
      describes: spec.describes,
      limit: config.rateLimits[name as keyof typeof RATE_LIMIT_VARIABLES].limit,
      windowSeconds: spec.windowSeconds,
      variable: spec.variable,
      enforced: config.rateLimitsEnabled,
    })),
  };
}
