import { KEY_SCOPES } from '../keys.ts';
import type { KeyScope, Role } from '../principal.ts';

/**
 * OAuth scopes are the key scopes (SPEC Authentication rule 2), one per grant:
 * `mcp:admin` ⊃ `mcp:write` ⊃ `mcp:read`. A user may grant no more than their
 * role allows: a member up to `mcp:write` (members cannot administer the
 * organization), an admin or owner up to `mcp:admin`.
 */

export const OAUTH_SCOPES = KEY_SCOPES;
const RANK: Record<KeyScope, number> = { 'mcp:read': 1, 'mcp:write': 2, 'mcp:admin': 3 };

export const isOAuthScope = (value: string): value is KeyScope => (OAUTH_SCOPES as readonly string[]).includes(value);

export const maxScopeFor = (role: Role): KeyScope => (role === 'member' ? 'mcp:write' : 'mcp:admin');

export const highestScope = (scopes: readonly KeyScope[]): KeyScope | undefined =>
  scopes.reduce<KeyScope | undefined>((best, s) => (best === undefined || RANK[s] > RANK[best] ? s : best), undefined);

export const scopeWithin = (scope: KeyScope, ceiling: KeyScope): boolean => RANK[scope] <= RANK[ceiling];

/** The weaker of two scopes: a grant's scope bounded by the user's current role. */
export const lowerScope = (a: KeyScope, b: KeyScope): KeyScope => (RANK[a] <= RANK[b] ? a : b);
