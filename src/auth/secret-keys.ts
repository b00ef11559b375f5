import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Bearer secrets shown once and stored only as a SHA-256 digest: organization
 * keys (`svc_`) and user webhook keys (`wfb_`) are both minted and checked here.
 */

/** Characters of a key kept in clear for listings (the type prefix plus a few random ones). */
const SHOWN_PREFIX_LENGTH = 12;

export interface MintedSecret {
  /** The full key: returned to the caller once, never stored. */
  key: string;
  /** Its first characters, safe to list. */
  prefix: string;
  /** SHA-256 of the key, hex: the only stored form. */
  hash: string;
}

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** The hex SHA-256 of a bearer secret: how it is stored and how it may be remembered. */
export const secretDigest = (bearer: string) => sha256(bearer).toString('hex');

/** `typePrefix` + 32 random bytes as base64url. */
export function mintSecret(typePrefix: string): MintedSecret {
  const key = typePrefix + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, SHOWN_PREFIX_LENGTH), hash: sha256(key).toString('hex') };
}

/**
 * The stored row for `bearer`, or null. `find` looks a live row up by its hex
 * hash (an index lookup); the constant-time compare is the actual check. A
 * bearer of another key type never reaches the store.
 */
export async function matchSecret<R extends { key_hash: string }>(
  bearer: string,
  typePrefix: string,
  find: (hashHex: string) => Promise<R | undefined>,
): Promise<R | null> {
  if (!bearer.startsWith(typePrefix)) return null;
  const digest = sha256(bearer);
  const row = await find(digest.toString('hex'));
  if (!row) return null;
  const stored = Buffer.from(row.key_hash, 'hex');
  return stored.length === digest.length && timingSafeEqual(stored, digest) ? row : null;
}
