import type { AnyTool, Principal } from '../../tools/define.ts';
import { canUse } from '../../tools/authorize.ts';
import { isOAuthScope, maxScopeFor, scopeWithin } from '../auth/oauth/scopes.ts';

/**
 * MCP authorization "scope challenge" (2025-11-25; RFC 6750 §3.1): an OAuth client calling a tool above its token's
 * scope is answered HTTP 403 with `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`, so the client
 * can ask the user for that scope and retry (the MCP SDK's transport does). Only where asking could help: an OAuth
 * token (an API key cannot be re-authorized), a tool of the registry the user's role may be granted; anything else
 * keeps the tool result `insufficient_scope` every caller gets.
 */

export interface ScopeChallenge {
  required: string;
  granted: string | null;
  header: string;
}

export function scopeChallenge(
  registry: readonly AnyTool[],
  principal: Principal | null,
  message: unknown,
  resourceMetadataUrl: string,
): ScopeChallenge | undefined {
  if (principal?.kind !== 'oauth_token' || !principal.role) return undefined;
  const call = message as { method?: unknown; params?: { name?: unknown } } | null;
  if (call?.method !== 'tools/call' || typeof call.params?.name !== 'string') return undefined;
  const name = call.params.name;
  const tool = registry.find((t) => t.name === name && t.mcp !== false);
  if (!tool || canUse(principal, tool) || !isOAuthScope(tool.scope) || !scopeWithin(tool.scope, maxScopeFor(principal.role))) return undefined;
  return {
    required: tool.scope,
    granted: principal.scope,
    header: `Bearer error="insufficient_scope", scope="${tool.scope}", resource_metadata="${resourceMetadataUrl}", error_description="${name} needs scope ${tool.scope}"`,
  };
}
