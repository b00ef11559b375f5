import crypto from 'node:crypto';
import { sharedNow } from '../store/clock.ts';
import { secretDigest } from './secret-keys.ts';

/**
 * Short-lived single-use secrets (session tokens, nonces, invitation and
 * e-mail links, one-time codes): random, and only their SHA-256 is stored.
 */
export const newToken = (bytes = 32): string => crypto.randomBytes(bytes).toString('base64url');

export const tokenHash = secretDigest;

/** Six decimal digits, uniformly drawn. */
export const newNumericCode = (): string => String(crypto.randomInt(0, 1_000_000)).padStart(6, '0');

export const isoIn = (ms: number, from = sharedNow()): string => new Date(from + ms).toISOString();
