import { ServiceError } from '../src/errors.ts';
import type { AnyTool, KeyScope, Principal, ToolScope } from './define.ts';

/**
 * Scope rules (SPEC Authentication rule 2): a key with no scope is
 * unrestricted; `mcp:admin` ⊃ `mcp:write` ⊃ `mcp:read`.
 */
const RANK: Record<KeyScope, number> = { 'mcp:read': 1, 'mcp:write': 2, 'mcp:admin': 3 };

export function scopeAllows(granted: KeyScope | null, required: ToolScope): boolean {
  if (required === 'public') return true;
  if (required === 'session' || required === 'internal') return false;
  if (required === 'webhook') return granted === null || RANK[granted] >= RANK['mcp:write'];
  return granted === null || RANK[granted] >= RANK[required];
}

/** Whether a caller may see (tools/list) and call a tool. */
export function canUse(principal: Principal | null, tool: Pick<AnyTool, 'scope' | 'anonymous'>): boolean {
  if (tool.scope === 'public') return true;
  if (principal === null) return tool.anonymous === true;
  if (principal.kind === 'user_key') return tool.scope === 'webhook';
  if (tool.scope === 'session') return principal.kind === 'session';
  return scopeAllows(principal.scope, tool.scope);
}

export function unauthorized(
  resourceMetadataUrl: string,
  message = 'Authentication required: send "Authorization: Bearer svc_..." with an organization API key (create one with `flowgate keys create --name NAME`) or an OAuth access token.',
  /** RFC 6750 error code for the challenge (`invalid_token` for a bad OAuth token). */
  bearerError?: string,
) {
  return new ServiceError(
    401,
    'unauthorized',
    message,
    {},
    {
      'WWW-Authenticate': `Bearer ${bearerError ? `error="${bearerError}", ` : ''}resource_metadata="${resourceMetadataUrl}"`,
    },
  );
}

export interface Caller {
  principal: Principal | null;
  internalService: boolean;
}

/** Throws the 401/403 a caller should see when it may not use this tool. */
export function authorize(caller: Caller, tool: Pick<AnyTool, 'scope' | 'anonymous'>, resourceMetadataUrl: string): void {
  const { principal } = caller;
  const required = tool.scope;
  if (required === 'public') return;
  if (required === 'internal') {
    if (caller.internalService) return;
    throw new ServiceError(401, 'unauthorized', 'This operation needs internal service authentication (the X-Internal-Service-Token header).');
  }
  if (!principal && tool.anonymous) return;
  if (required === 'session') {
    if (principal?.kind === 'session') return;
    throw new ServiceError(
      401,
      'session_required',
      'This operation needs a signed-in browser session (the session cookie from POST /api/auth/siwe/verify); API keys cannot call it.',
    );
  }
  if (!principal) throw unauthorized(resourceMetadataUrl);
  if (principal.kind === 'user_key') {
    if (required === 'webhook') return;
    throw unauthorized(
      resourceMetadataUrl,
      'wfb_ keys only authenticate webhook triggers (POST /api/workflows/{id}/webhook); use an organization key (svc_...) here.',
    );
  }
  // Sessions carry no scope (SPEC rule 2), but their role bounds them: admin-scope operations need an admin or owner.
  if (principal.kind === 'session' && required === 'mcp:admin' && principal.role === 'member') {
    throw new ServiceError(403, 'not_admin_or_owner', 'Only an admin or owner of this organization may do this; your role is member.', {
      role: 'member',
      required: 'admin',
    });
  }
  if (!scopeAllows(principal.scope, required)) {
    throw new ServiceError(
      403,
      'insufficient_scope',
      'insufficient_scope',
      {
        required_scope: required,
        granted_scope: principal.scope,
        message:
          principal.kind === 'oauth_token'
            ? `This operation needs scope ${required}; this access token has ${principal.scope}. Authorize again asking for scope ${required}.`
            : `This operation needs a key with scope ${required} (or no scope); this key has ${principal.scope}. Create a suitable key with \`flowgate keys create --name NAME --scope ${required}\`.`,
      },
      // RFC 6750 §3.1: an OAuth client learns which scope to ask the user for.
      principal.kind === 'oauth_token'
        ? { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${required}", resource_metadata="${resourceMetadataUrl}"` }
        : undefined,
    );
  }
}

/** The authenticated caller inside a handler whose scope authorize() already enforced. */
export function requirePrincipal(ctx: { principal: Principal | null }): Principal {
  if (!ctx.principal) throw new ServiceError(401, 'unauthorized', 'Authentication required');
  return ctx.principal;
}
