import { formatUnits } from 'viem';

/** Display helpers: numbers, wei, durations, dates, and explorer links found in step data. */

export const count = (n: number) => n.toLocaleString('en-US');

export function ether(wei: string | null | undefined, unit = 'ETH', decimals = 18): string {
  if (wei === null || wei === undefined) return '—';
  try {
    const value = formatUnits(BigInt(wei), decimals);
    const [whole, fraction = ''] = value.split('.');
    const trimmed = fraction.slice(0, 6).replace(/0+$/, '');
    return `${Number(whole).toLocaleString('en-US')}${trimmed ? `.${trimmed}` : ''} ${unit}`;
  } catch {
    return wei;
  }
}

export function gas(wei: string | null | undefined): string {
  if (!wei) return '—';
  return ether(wei);
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** Statuses the stylesheet colours; anything else is shown neutrally (the list is open, SPEC "Execution status"). */
export const statusClass = (status: string) =>
  ['success', 'completed'].includes(status)
    ? 'ok'
    : ['error', 'failed', 'system_error'].includes(status)
      ? 'bad'
      : ['pending', 'running', 'unconfirmed'].includes(status)
        ? 'busy'
        : 'neutral';

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Transaction hashes anywhere in a step's output, with the keys they sit under. */
export function transactionHashes(value: unknown, found = new Set<string>(), depth = 0): string[] {
  if (depth > 6 || value === null || value === undefined) return [...found];
  if (typeof value === 'string') {
    if (TX_HASH.test(value)) found.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value.slice(0, 100)) transactionHashes(item, found, depth + 1);
  } else if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      if (typeof item === 'string' ? /hash|tx/i.test(key) : true) transactionHashes(item, found, depth + 1);
    }
  }
  return [...found];
}

/** The chain a step ran on, read from its input (`network`, `chainId`). */
export function chainOf(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const record = value as Record<string, unknown>;
  for (const key of ['chainId', 'network']) {
    const v = record[key];
    if (typeof v === 'string' || typeof v === 'number') return String(v);
  }
  return undefined;
}

export const pretty = (value: unknown) => (value === undefined ? '' : JSON.stringify(value, null, 2));
