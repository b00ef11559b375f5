import crypto from 'node:crypto';
import { promisify } from 'node:util';

/**
 * Password hashing with node's scrypt (memory-hard; no extra dependency).
 * Stored as `scrypt$N$r$p$<salt b64url>$<key b64url>` so the cost can be
 * raised later without breaking stored hashes. Comparison is constant-time.
 */

const scrypt = promisify(crypto.scrypt) as (password: string, salt: Buffer, keylen: number, options: crypto.ScryptOptions) => Promise<Buffer>;

/** N = 2^15, r = 8: about 32 MiB and a few tens of milliseconds per hash. */
const COST = { N: 1 << 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const maxmem = (N: number, r: number) => 128 * N * r * 2;

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const key = await scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { ...COST, maxmem: maxmem(COST.N, COST.r) });
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const [N, R, P] = [Number(n), Number(r), Number(p)];
  if (![N, R, P].every(Number.isSafeInteger) || N > 1 << 20) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await scrypt(password.normalize('NFKC'), Buffer.from(salt, 'base64url'), expected.length, { N, r: R, p: P, maxmem: maxmem(N, R) });
  return crypto.timingSafeEqual(actual, expected);
}

/**
 * A hash of nothing anyone knows: checked against when the account is
 * unknown or has no password, so a refusal takes as long as a wrong password.
 */
let decoy: Promise<string> | undefined;
export const decoyPasswordHash = () => (decoy ??= hashPassword(crypto.randomBytes(32).toString('hex')));
