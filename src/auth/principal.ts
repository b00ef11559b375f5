/** Who is calling: the identity every edge resolves and every operation receives. */

export type KeyScope = 'mcp:read' | 'mcp:write' | 'mcp:admin';

export interface Principal {
  /** `user_key`: a `wfb_` webhook key, accepted only by `webhook`-scoped operations. */
  kind: 'api_key' | 'user_key';
  organizationId: string;
  userId: string;
  keyId: string;
  /** null: the key has no scope and is unrestricted (SPEC Authentication rule 2). */
  scope: KeyScope | null;
}
