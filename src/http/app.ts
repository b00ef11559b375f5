import { createHash } from 'node:crypto';
import { isCredentialName, REDACTED } from '../text/redact.ts';
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { AnyTool, ToolContext } from '../../tools/define.ts';
import { isLoopbackHost } from '../config.ts';
import { ServiceError } from '../errors.ts';
import type { Services } from '../services.ts';
import { MCP_INSTRUCTIONS } from '../discovery/identity.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { requestAuth } from './auth.ts';
import { signUpBindingFrom } from '../auth/session-cookie.ts';
import { originRules } from './csrf.ts';
import { renderErrors, sendError } from './errors.ts';
import { jsonBody } from './json-body.ts';
import { mcpRouter } from './mcp-route.ts';
import { buildOpenApi } from './openapi.ts';
import { operationLookup, restRouter } from './rest.ts';
import { corsByRoute } from './cors.ts';
import { originPolicy } from './origins.ts';
import { docsRouter } from './docs-route.ts';
import { dashboardRouter } from './app-route.ts';
import { buildDocsSite } from '../docs/site.ts';
import { TOOL_FAMILIES } from '../../tools/families.ts';
import { serviceVersion } from './versioning.ts';
import { isInternalService } from './internal-service.ts';
import { getListing, listingsDerived } from '../catalog/listings.ts';
import { listingOperations, paymentSecuritySchemes } from './openapi-listings.ts';
import { workflowServerInfo, workflowToolSet } from '../mcp/workflow-server.ts';
import { MCP_ENDPOINTS, resourceMap, WORKFLOW_MCP_ENDPOINT } from './oauth/resources.ts';
import { oauthRouter } from './oauth/router.ts';
import { inSequence } from './in-sequence.ts';
import { hostHeaderCheck } from './host-header.ts';
import { onlyUnder } from './path-gate.ts';

/** Assembles the HTTP edge: middleware, the generated REST and MCP routes, one error renderer. */

/*
 * Where MCP is served (src/http/oauth/resources.ts): /mcp, and /.well-known/mcp, the same transport for clients
 * that look there (its GET is a discovery document, tools/discovery.ts); /mcp/w/:slug, one server per listed workflow.
 */

function allowedHostnames(services: Services): string[] {
  const base = new URL(services.config.baseUrl).hostname;
  return [...new Set(['localhost', '127.0.0.1', '[::1]', base, ...services.config.allowedHosts])];
}

/**
 * Request headers a workflow may see (a webhook trigger's `headers`, stored with the run): hop-by-hop headers and
 * credentials removed, the latter by the names the log redaction knows (`x-api-key`, `proxy-authorization`,
 * `x-hub-signature-256`...), since whoever may read the organization's runs would otherwise read what a sender
 * authenticated with.
 */
const HIDDEN_HEADERS = new Set(['authorization', 'cookie', 'x-internal-service-token', 'payment-signature', 'connection', 'keep-alive', 'transfer-encoding']);
function publicHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers)
      .filter(([name, value]) => value !== undefined && !HIDDEN_HEADERS.has(name) && !isCredentialName(name))
      .map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value!]),
  );
}

/** The query a workflow may see: a parameter named like a credential (`?token=`, `?api_key=`) keeps its name, not its value. */
function publicQuery(query: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(query).map(([name, value]) => [name, isCredentialName(name) ? REDACTED : value]));
}

function paymentHeaders(req: Request): ToolContext['payment'] {
  const signature = req.headers['payment-signature'];
  const authorization = req.headers.authorization;
  return {
    x402: typeof signature === 'string' ? signature : undefined,
    mpp: typeof authorization === 'string' && /^Payment\s/i.test(authorization) ? authorization : undefined,
  };
}

export interface HttpAppOptions {
  /** False serves every MCP POST through the SDK's server and transport (src/http/mcp-route.ts `fastPath`): tests and the benchmark compare the two. */
  mcpFastPath?: boolean;
}

export function createHttpApp(services: Services, registry: readonly AnyTool[], options: HttpAppOptions = {}): express.Express {
  const { config } = services;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', 'strong');
  // Express 5's "simple" parser: flat string values, no nested objects from `a[b]=c`.
  app.set('query parser', 'simple');
  // Off unless the operator names the proxies in front (FLOWGATE_TRUST_PROXY): then req.ip, which per-IP limits,
  // sessions and the audit log read, is the address the nearest trusted proxy saw, not the balancer's own.
  if (config.trustProxy !== false) app.set('trust proxy', config.trustProxy);

  // Every handler before the 404 runs in this one sequence, in this order (src/http/in-sequence.ts).
  const front: RequestHandler[] = [];
  // DNS-rebinding protection applies where a browser could reach us: loopback binds.
  if (isLoopbackHost(config.host)) front.push(hostHeaderCheck(allowedHostnames(services)));
  const origins = originPolicy(config);
  const operations = operationLookup(registry);
  const resources = resourceMap(config.baseUrl);
  const isMcpEndpoint = resources.isMcpEndpoint;
  // A route takes a credential unless it is a public operation; the MCP endpoints (not operations themselves) always do.
  const takesCredential = (method: string, path: string) => {
    const operation = operations.find(method, path);
    return operation ? operation.tool.scope !== 'public' : isMcpEndpoint(path);
  };
  front.push(corsByRoute(takesCredential, origins), serviceVersion);

  // The OAuth authorization server authenticates its own callers (clients, and the session on the consent page).
  front.push(oauthRouter(services, origins));
  // 401s point to the protected-resource metadata of the path asked for (RFC 9728): /mcp, /mcp/w/<slug> or the REST API.
  const resourceMetadataUrl = (path: string) => resources.of(path).metadataUrl;
  front.push(
    requestAuth({ keys: services.keys, sessions: services.sessions, store: services.store, baseUrl: config.baseUrl, resources }),
    originRules(origins, config.baseUrl),
  );

  const contextFor =
    (transport: ToolContext['transport']) =>
    (req: Request, res: Response): ToolContext => {
      let restRequest: ToolContext['request'];
      return {
        principal: req.principal,
        services,
        internalService: isInternalService(req.headers['x-internal-service-token'], config.internalServiceSecret),
        // Resolving it walks the proxy settings: only anonymous rate limits read it.
        get ip() {
          return req.ip ?? 'unknown';
        },
        transport,
        tools: registry,
        idempotencyKey: typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined,
        // Read on first use: only following a sign-up link looks at it.
        get signUpBinding() {
          return transport === 'rest' ? signUpBindingFrom(req.headers.cookie, config.baseUrl) : undefined;
        },
        setHeader: transport === 'rest' ? (name, value) => res.setHeader(name, value) : () => {},
        setStatus: transport === 'rest' ? (status) => void (res.locals.status = status) : () => {},
        // Built on first read: only the webhook trigger looks at it.
        get request() {
          if (transport !== 'rest') return undefined;
          return (restRequest ??= { method: req.method, headers: publicHeaders(req.headers), query: publicQuery(req.query as Record<string, unknown>) });
        },
        // MCP carries payment credentials in `_meta` (src/mcp/toolset.ts), REST in these two headers.
        payment: transport === 'rest' ? paymentHeaders(req) : undefined,
      };
    };

  for (const path of MCP_ENDPOINTS) {
    front.push(
      mcpRouter({
        path,
        info: { name: 'flowgate', title: 'Flowgate', version: GATEWAY_VERSION, instructions: MCP_INSTRUCTIONS },
        registry,
        rateLimiter: services.rateLimiter,
        baseUrl: config.baseUrl,
        resourceMetadataUrl,
        bodyLimitBytes: config.bodyLimitBytes,
        origins,
        contextFor: contextFor('mcp'),
        refuseOtherMethods: path === '/mcp',
        fastPath: options.mcpFastPath,
      }),
    );
  }

  // One MCP server per listed workflow, generated from the same listing data as REST and /mcp.
  const callTool = registry.find((t) => t.name === 'call_workflow');
  if (callTool) {
    const mcpContext = contextFor('mcp');
    front.push(
      mcpRouter({
        path: WORKFLOW_MCP_ENDPOINT,
        info: { name: 'flowgate-workflow', title: 'Flowgate workflow', version: GATEWAY_VERSION, instructions: '' },
        registry,
        rateLimiter: services.rateLimiter,
        baseUrl: config.baseUrl,
        resourceMetadataUrl,
        bodyLimitBytes: config.bodyLimitBytes,
        origins,
        contextFor: mcpContext,
        fastPath: options.mcpFastPath,
        async serverFor(req, res) {
          const listing = await getListing(services.store, String(req.params.slug));
          return { info: workflowServerInfo(listing, GATEWAY_VERSION), tools: workflowToolSet(listing, callTool, () => mcpContext(req, res)) };
        },
      }),
    );
  }

  front.push(jsonBody(config.bodyLimitBytes));

  // Built on the first request rather than at start (README "Start and memory"); the registry does not change after.
  let built: ReturnType<typeof buildOpenApi> | undefined;
  // Listed workflows change with the catalog and publishing: the document is serialized once per version of them.
  const thisApp = {};
  const openApiRoute = Router();
  openApiRoute.get('/openapi.json', async (_req, res, next) => {
    try {
      const { body, etag } = await listingsDerived(services.store, thisApp, 'openapi.json', (listings) => {
        const openApi = (built ??= buildOpenApi(registry, config));
        const document = Buffer.from(
          JSON.stringify({
            ...openApi,
            paths: { ...openApi.paths, ...listingOperations(listings, services.payments) },
            components: { ...openApi.components, securitySchemes: { ...openApi.components.securitySchemes, ...paymentSecuritySchemes } },
          }),
        );
        return { body: document, etag: `"${createHash('sha256').update(document).digest('base64url')}"` };
      });
      res.setHeader('Cache-Control', 'public, max-age=300');
      // Set here, express does not hash the body again, and answers a matching If-None-Match with 304.
      res.setHeader('ETag', etag);
      res.type('application/json').send(body);
    } catch (error) {
      next(error);
    }
  });

  front.push(
    onlyUnder(['/openapi.json'], openApiRoute),
    dashboardRouter(),
    docsRouter(buildDocsSite({ config, registry, families: TOOL_FAMILIES })),
    restRouter(registry, contextFor('rest')),
  );
  app.use(inSequence(front));

  app.use((req, res) => {
    sendError(
      res,
      new ServiceError(404, 'not_found', `No route for ${req.method} ${req.path}. The full interface is described at ${config.baseUrl}/openapi.json.`),
    );
  });
  app.use(renderErrors);
  return app;
}
