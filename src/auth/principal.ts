/** Who is calling: the identity every edge resolves and every operation receives. */

export type KeyScope = 'mcp:read' | 'mcp:write' | 'mcp:admin';

/** Organization roles, weakest first (SPEC Authentication rule 9). */
export const ROLES = ['member', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

export interface Principal {
  /**
   * `api_key`: an organization `svc_` key; `user_key`: a `wfb_` webhook key, accepted
   * only by `webhook`-scoped operations; `session`: a signed-in browser (the session cookie).
   */
  kind: 'api_key' | 'user_key' | 'session';
  organizationId: string;
  userId: string;
  /** The credential's id: the API key's id, or the session's id for `session`. Per-credential limits key on it. */
  keyId: string;
  /** null: unrestricted (a key without scope, or a session: SPEC Authentication rule 2). */
  scope: KeyScope | null;
  /** Sessions only: the user's role in the active organization, read from the membership on every request. */
  role?: Role;
}
