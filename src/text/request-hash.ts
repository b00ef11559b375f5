import { createHash } from 'node:crypto';

/**
 * A request's identity for idempotency: SHA-256 over canonical JSON (sorted
 * keys), so formatting and key order never change it while values do. A leaf
 * module: the engine and the guards both use it.
 */

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const requestHash = (value: unknown) => createHash('sha256').update(canonicalJson(value)).digest('hex');
