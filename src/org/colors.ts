import { z } from 'zod';

/** Colors of organization tags and projects: hex strings, plus the palette new projects draw from. */

// Explicit case ranges rather than the `i` flag: the pattern is also published in JSON Schema.
const HEX_COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

/**
 * `#rgb` or `#rrggbb`, any case, stored lowercase so equal colors compare equal.
 * The error repeats the value received, so a caller sees what it actually sent.
 */
export const hexColorSchema = z
  .string()
  .trim()
  .regex(HEX_COLOR, { error: (issue) => `expected a hex color such as "#3b82f6" or "#38f", received ${JSON.stringify(String(issue.input).slice(0, 40))}` })
  .transform((value) => value.toLowerCase());

/** Distinct, readable on light and dark backgrounds. */
export const PROJECT_PALETTE = [
  '#3b82f6', // blue
  '#10b981', // emerald
  '#f59e0b', // amber
  '#ef4444', // red
  '#8b5cf6', // violet
  '#ec4899', // pink
  '#14b8a6', // teal
  '#f97316', // orange
  '#6366f1', // indigo
  '#84cc16', // lime
] as const;

/** The n-th palette color (0-based), wrapping around: an organization's n-th project gets `paletteColor(n)`. */
export const paletteColor = (index: number): string => PROJECT_PALETTE[((index % PROJECT_PALETTE.length) + PROJECT_PALETTE.length) % PROJECT_PALETTE.length]!;
