/** Plain-text output helpers for the client commands: no colours, so output pipes and greps cleanly. */

/** Left-aligned columns separated by two spaces, headers first. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(headers), ...rows.map(line)].join('\n');
}

/** A value on one line, shortened to `max` characters. */
export function oneLine(value: string, max = 200): string {
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The API's millisecond strings ("1234") as "1234 ms" or "1.2 s". */
export function duration(ms: string | null): string {
  if (ms === null || !/^\d+$/.test(ms)) return '';
  const n = Number(ms);
  return n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(1)} s`;
}

export const json = (value: unknown) => JSON.stringify(value, null, 2);
