import { ServiceError } from '../src/errors.ts';
import type { KeyScope, Principal, ToolScope } from './define.ts';

/**
 * Scope rules (SPEC Authentication rule 2): a key with no scope is
 * unrestricted; `mcp:admin` ⊃ `mcp:write` ⊃ `mcp:read`.
 */
const RANK: Record<KeyScope, number> = { 'mcp:read': 1, 'mcp:write': 2, 'mcp:admin': 3 };

export function scopeAllows(granted: KeyScope | null, required: ToolScope): boolean {
  if (required === 'public') return true;
  if (required === 'session') return false;
  return granted === null || RANK[granted] >= RANK[required];
}

/** Whether a caller may see (tools/list) and call a tool of this scope. */
export function canUse(principal: Principal | null, required: ToolScope): boolean {
  if (required === 'public') return true;
  return principal !== null && scopeAllows(principal.scope, required);
}

export function unauthorized(resourceMetadataUrl: string, message = 'Authentication required: send "Authorization: Bearer svc_..." with an organization API key (create one with `flowgate keys create --name NAME`).') {
  return new ServiceError(401, 'unauthorized', message, {}, {
    'WWW-Authenticate': `Bearer resource_metadata="${resourceMetadataUrl}"`,
  });
}

/** Throws the 401/403 a caller should see when it may not use a tool of `required` scope. */
export function authorize(principal: Principal | null, required: ToolScope, resourceMetadataUrl: string): void {
  if (required === 'public') return;
  if (required === 'session') {
    throw new ServiceError(401, 'session_required', 'This operation needs a signed-in browser session; API keys cannot call it.');
  }
  if (!principal) throw unauthorized(resourceMetadataUrl);
  if (!scopeAllows(principal.scope, required)) {
    throw new ServiceError(403, 'insufficient_scope', 'insufficient_scope', {
      required_scope: required,
      granted_scope: principal.scope,
      message: `This operation needs a key with scope ${required} (or no scope); this key has ${principal.scope}. Create a suitable key with \`flowgate keys create --name NAME --scope ${required}\`.`,
    });
  }
}
