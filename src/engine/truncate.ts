/** Large step data shortened for agents: `{_truncated, originalSize, preview}` in place of the value. */
export const TRUNCATE_AT_CHARS = 4_000;

export function truncateLarge(value: unknown, limit = TRUNCATE_AT_CHARS): unknown {
  if (value === undefined) return value;
  const text = JSON.stringify(value) ?? '';
  return text.length <= limit ? value : shortened(text, limit);
}

const shortened = (text: string, limit: number) => ({ _truncated: true, originalSize: text.length, preview: text.slice(0, limit) });

/**
 * truncateLarge of the value stored as `text` (JSON.stringify's own output, as log rows are written), read from
 * the text: only a value short enough to keep is parsed, so a 5 MB output costs a slice instead of a parse.
 */
export function truncateLargeText(text: string | null, limit = TRUNCATE_AT_CHARS): unknown {
  if (text === null) return null;
  if (text.length > limit) return shortened(text, limit);
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
