import { ServiceError } from '../errors.ts';

/** Who is calling direct execution, and the answer every direct route returns. */

export interface DirectCaller {
  organizationId: string;
  apiKeyId: string | null;
  /** False for read-only keys: they may simulate and read, never broadcast. */
  canBroadcast: boolean;
  idempotencyKey?: string;
}

export interface DirectResponse {
  status: number;
  body: unknown;
}

export const insufficientScopeToBroadcast = () =>
  new ServiceError(403, 'insufficient_scope', 'insufficient_scope', {
    required_scope: 'mcp:write',
    message: 'This key has scope mcp:read: it may simulate (simulate: true) and read status, but broadcasting needs mcp:write or mcp:admin.',
  });
