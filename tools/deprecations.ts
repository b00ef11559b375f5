import type { AnyTool, ToolContext } from './define.ts';
import { isRecord } from '../src/is-record.ts';

/**
 * Deprecated paths and request shapes, declared once. A registry entry lists
 * the ones it accepts in `deprecations: [...]`; invokeTool then signals them
 * on every response that used them (successful or not) with RFC 9745
 * `Deprecation`, RFC 8594 `Sunset` and `Link rel="deprecation"`, and
 * /openapi.json publishes the same list under `x-api-versioning`.
 *
 * - `path`: the route itself is deprecated; every call through it is signalled.
 * - `request-field` / `workflow-field`: only requests that carry the shape are
 *   signalled (`detect` looks at the raw input, before schema transforms).
 */

export type DeprecationKind = 'path' | 'request-field' | 'workflow-field';

export interface DeprecationDeclaration {
  kind: DeprecationKind;
  /** What is deprecated, as a client would write it. */
  subject: string;
  replacement: string;
  /** When the deprecation took effect (the `Deprecation` header's date). */
  deprecatedAt: string;
  /** Earliest date the deprecated thing may stop being accepted; at least 180 days after deprecatedAt. */
  sunsetAt: string;
  /** Docs page and anchor explaining the replacement, relative to the base URL. */
  docs: string;
  /** For shapes: whether a raw request input uses the deprecated shape. Paths are always signalled. */
  detect?(input: Record<string, unknown>): boolean;
}

const has = (record: Record<string, unknown>, key: string) => Object.hasOwn(record, key) && record[key] !== undefined;

/** Legacy names of abiFunction and functionArgs inside workflow node configs (SPEC Versioning 7). */
export const LEGACY_WORKFLOW_FIELDS = ['functionName', 'function', 'method', 'args'] as const;

function usesLegacyWorkflowFields(input: Record<string, unknown>): boolean {
  if (!Array.isArray(input.nodes)) return false;
  return input.nodes.some((node) => {
    const config = isRecord(node) && isRecord(node.data) ? node.data.config : undefined;
    return isRecord(config) && LEGACY_WORKFLOW_FIELDS.some((key) => has(config, key));
  });
}

export const DEPRECATIONS = {
  'legacy-execute-path': {
    kind: 'path',
    subject: 'POST /api/workflow/{workflowId}/execute',
    replacement: 'POST /api/workflows/{workflowId}/execute',
    deprecatedAt: '2026-11-01T00:00:00Z',
    sunsetAt: '2027-06-01T00:00:00Z',
    docs: '/docs/versioning#legacy-execute-path',
  },
  'legacy-execution-path': {
    kind: 'path',
    subject: 'GET /api/workflows/executions/{executionId}',
    replacement:
      'GET /api/workflows/executions/{executionId}/details (beside /status, /wait and /logs; the old path was ambiguous with /api/workflows/{workflowId}/duplicate for OpenAPI tools)',
    deprecatedAt: '2026-11-23T00:00:00Z',
    sunsetAt: '2027-06-01T00:00:00Z',
    docs: '/docs/versioning#legacy-execution-path',
  },
  'network-field': {
    kind: 'request-field',
    subject: 'network',
    replacement: 'chainId (chain_id over MCP): a numeric EIP-155 chain id; when both are sent chainId wins',
    deprecatedAt: '2026-11-01T00:00:00Z',
    sunsetAt: '2027-06-01T00:00:00Z',
    docs: '/docs/versioning#network-field',
    detect: (input) => has(input, 'network'),
  },
  'function-name-fields': {
    kind: 'workflow-field',
    subject: 'nodes[].data.config.functionName (also function, method) and nodes[].data.config.args',
    replacement: 'abiFunction and functionArgs',
    deprecatedAt: '2026-11-01T00:00:00Z',
    sunsetAt: '2027-06-01T00:00:00Z',
    docs: '/docs/versioning#function-name-fields',
    detect: usesLegacyWorkflowFields,
  },
} as const satisfies Record<string, DeprecationDeclaration>;

export type DeprecationName = keyof typeof DEPRECATIONS;

export const LEGACY_EXECUTE_PATH = '/api/workflow/:workflowId/execute';
export const LEGACY_EXECUTION_PATH = '/api/workflows/executions/:executionId';

const DAY_MS = 86_400_000;
export const MIN_SUNSET_LEAD_DAYS = 180;

// A declaration that breaks the sunset lead time fails at start-up, not in production.
for (const [name, d] of Object.entries(DEPRECATIONS) as [DeprecationName, DeprecationDeclaration][]) {
  if (Date.parse(d.sunsetAt) - Date.parse(d.deprecatedAt) < MIN_SUNSET_LEAD_DAYS * DAY_MS) {
    throw new Error(`Deprecation ${name}: sunsetAt must be at least ${MIN_SUNSET_LEAD_DAYS} days after deprecatedAt`);
  }
}

const declaration = (name: DeprecationName): DeprecationDeclaration => DEPRECATIONS[name];

/**
 * The three headers for a set of deprecations used by one request. Several at
 * once: the earliest dates win (the strictest promise), one Link per item.
 */
export function deprecationHeaders(names: readonly DeprecationName[], baseUrl: string): Record<string, string> {
  if (names.length === 0) return {};
  const items = [...new Set(names)].map(declaration);
  const deprecatedAt = Math.min(...items.map((d) => Date.parse(d.deprecatedAt)));
  const sunsetAt = Math.min(...items.map((d) => Date.parse(d.sunsetAt)));
  return {
    Deprecation: `@${Math.floor(deprecatedAt / 1000)}`,
    Sunset: new Date(sunsetAt).toUTCString(),
    Link: items.map((d) => `<${baseUrl}${d.docs}>; rel="deprecation"`).join(', '),
  };
}

/** The declared deprecations of `tool` that this raw input uses. */
export function usedDeprecations(tool: Pick<AnyTool, 'deprecations'>, rawInput: unknown): DeprecationName[] {
  const input = isRecord(rawInput) ? rawInput : {};
  return (tool.deprecations ?? []).filter((name) => {
    const d = declaration(name);
    return d.kind === 'path' || d.detect?.(input) === true;
  });
}

/** Sets the headers for the deprecations a request used (REST; MCP has no response headers). */
export function signalDeprecations(tool: Pick<AnyTool, 'deprecations'>, rawInput: unknown, ctx: ToolContext): void {
  const headers = deprecationHeaders(usedDeprecations(tool, rawInput), ctx.services.config.baseUrl);
  for (const [name, value] of Object.entries(headers)) ctx.setHeader(name, value);
}

/** The `x-api-versioning.deprecations` list of /openapi.json and the versioning docs page. */
export function describeDeprecations(registry: readonly AnyTool[]) {
  return (Object.entries(DEPRECATIONS) as [DeprecationName, DeprecationDeclaration][]).map(([name, d]) => ({
    name,
    kind: d.kind,
    subject: d.subject,
    replacement: d.replacement,
    deprecatedAt: d.deprecatedAt,
    sunsetAt: d.sunsetAt,
    docs: d.docs,
    operations: registry.filter((t) => t.deprecations?.includes(name)).map((t) => t.name),
  }));
}
