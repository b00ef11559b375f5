import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Constant-time check of the X-Internal-Service-Token header against the configured secret. */
export function isInternalService(header: string | string[] | undefined, secret: string | undefined): boolean {
  if (!secret || typeof header !== 'string' || header.length === 0) return false;
  return timingSafeEqual(digest(header), digest(secret));
}
