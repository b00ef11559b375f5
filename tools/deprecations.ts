import type { ToolContext } from './define.ts';

/**
 * Deprecated request shapes and paths, signalled on every response that used
 * them (RFC 9745 Deprecation, RFC 8594 Sunset, Link rel="deprecation").
 * Sunset is at least 180 days after the deprecation first appeared.
 */
export const DEPRECATIONS = {
  legacyExecutePath: {
    deprecatedAt: '2026-11-01T00:00:00Z',
    sunsetAt: '2027-06-01T00:00:00Z',
    docs: '/docs/versioning#legacy-execute-path',
    replacement: 'POST /api/workflows/{workflowId}/execute',
  },
  networkField: {
    deprecatedAt: '2026-11-01T00:00:00Z',
    sunsetAt: '2027-06-01T00:00:00Z',
    docs: '/docs/versioning#network-field',
    replacement: 'the chainId request field',
  },
} as const;

export type DeprecationName = keyof typeof DEPRECATIONS;

export const LEGACY_EXECUTE_PATH = '/api/workflow/:workflowId/execute';

export function deprecate(ctx: ToolContext, name: DeprecationName): void {
  const d = DEPRECATIONS[name];
  ctx.setHeader('Deprecation', `@${Math.floor(Date.parse(d.deprecatedAt) / 1000)}`);
  ctx.setHeader('Sunset', new Date(d.sunsetAt).toUTCString());
  ctx.setHeader('Link', `<${ctx.services.config.baseUrl}${d.docs}>; rel="deprecation"`);
}
