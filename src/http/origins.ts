import type { Config } from '../config.ts';

/**
 * Browser origins the gateway trusts: its own base URL's origin and those of
 * FLOWGATE_ALLOWED_ORIGINS. /mcp refuses any other `Origin` (the streamable
 * HTTP transport's DNS-rebinding rule); CORS answers of routes that take a
 * credential name only these.
 */
export interface OriginPolicy {
  allows(origin: string): boolean;
}

export function originPolicy(config: Pick<Config, 'baseUrl' | 'allowedOrigins'>): OriginPolicy {
  const allowed = new Set([new URL(config.baseUrl).origin, ...config.allowedOrigins]);
  return {
    allows(origin) {
      try {
        return allowed.has(new URL(origin).origin);
      } catch {
        return false; // `null` (sandboxed frames, file://) and anything unparsable
      }
    },
  };
}
