/** Who is calling: the identity every edge resolves and every operation receives. */

export type KeyScope = 'mcp:read' | 'mcp:write' | 'mcp:admin';

/** Organization roles, weakest first (SPEC Authentication rule 9). */
export const ROLES = ['member', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

export interface Principal {
  /**
   * `api_key`: an organization `svc_` key; `user_key`: a `wfb_` webhook key, accepted
   * only by `webhook`-scoped operations; `session`: a signed-in browser (the session cookie);
   * `oauth_token`: an OAuth access token, accepted where an organization key of its scope is.
   */
  kind: 'api_key' | 'user_key' | 'session' | 'oauth_token';
  organizationId: string;
  userId: string;
  /** The credential's id: the API key's id, the session's id, or the OAuth grant's id. Per-credential limits key on it. */
  keyId: string;
  /** null: unrestricted (a key without scope, or a session: SPEC Authentication rule 2). */
  scope: KeyScope | null;
  /** Sessions and OAuth tokens: the user's role in the organization, read from the membership on every request. */
  role?: Role;
}
