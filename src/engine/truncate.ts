/** Large step data shortened for agents: `{_truncated, originalSize, preview}` in place of the value. */
export const TRUNCATE_AT_CHARS = 4_000;

export function truncateLarge(value: unknown, limit = TRUNCATE_AT_CHARS): unknown {
  if (value === undefined) return value;
  const text = JSON.stringify(value) ?? '';
  if (text.length <= limit) return value;
  return { _truncated: true, originalSize: text.length, preview: text.slice(0, limit) };
}
