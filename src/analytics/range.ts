import { z } from 'zod';
import { sharedNow } from '../store/clock.ts';
import { badRequest } from '../errors.ts';

/**
 * SPEC "Analytics": the `range` query (24h, 7d, 30d, 90d, custom with
 * customStart/customEnd) shared by summary, time-series, networks, runs and
 * the stream, resolved to a half-open window [since, until) of creation
 * times and the time-series bucket size that suits it.
 */

export const RANGES = ['24h', '7d', '30d', '90d', 'custom'] as const;
export type RangeName = (typeof RANGES)[number];

/** An ISO 8601 time with a zone. Checked by a refinement, not z.iso.datetime: its pattern would cost an agent 500 bytes per field in tools/list. */
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;
/** Date.parse rolls an impossible day forward (2026-02-31 is March 3rd): the day must be one of its month's. */
function isCalendarDay(v: string): boolean {
  const [year, month, day] = v.slice(0, 10).split('-').map(Number) as [number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
const isoTime = z
  .string()
  .refine(
    (v) => v.length <= 40 && ISO_TIME.test(v) && !Number.isNaN(Date.parse(v)) && isCalendarDay(v),
    'an ISO 8601 time with a zone on a day that exists, such as 2026-01-31T00:00:00Z',
  );

export const rangeFields = {
  // Default 30d, applied in resolveWindow: a `default` in the schema would cost every tools/list 16 bytes per tool.
  range: z.enum(RANGES).optional(),
  customStart: isoTime.optional(),
  customEnd: isoTime.optional(),
};
export const rangeInput = z.object(rangeFields);
export type RangeInput = z.output<typeof rangeInput>;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const PRESET_MS: Record<Exclude<RangeName, 'custom'>, number> = { '24h': DAY, '7d': 7 * DAY, '30d': 30 * DAY, '90d': 90 * DAY };
/** Bucket sizes, smallest first; a range takes the smallest that draws it in at most MAX_BUCKETS. */
const BUCKET_MS = [HOUR, 6 * HOUR, DAY, 7 * DAY] as const;
const MAX_BUCKETS = 100;
/** A custom range spans at most two years, so a time series stays a chart (weekly buckets at most). */
const MAX_CUSTOM_MS = 731 * DAY;

export interface Window {
  /** ISO, inclusive. */
  since: string;
  /** ISO, exclusive. */
  until: string;
  sinceMs: number;
  untilMs: number;
  /** Time-series bucket size; buckets start at multiples of it since the Unix epoch (whole UTC hours, days). */
  bucketMs: number;
}

const invalid = (message: string, path: string) => badRequest('invalid_input', message, { issues: [{ path, message, code: 'custom' }] });

export function resolveWindow(input: RangeInput, now = sharedNow()): Window {
  const range = input.range ?? '30d';
  let sinceMs: number;
  let untilMs: number;
  if (range === 'custom') {
    if (!input.customStart || !input.customEnd)
      throw invalid('range=custom needs both customStart and customEnd (ISO 8601 times).', input.customStart ? 'customEnd' : 'customStart');
    sinceMs = Date.parse(input.customStart);
    untilMs = Date.parse(input.customEnd);
    if (untilMs <= sinceMs) throw invalid('customEnd must be later than customStart.', 'customEnd');
    if (untilMs - sinceMs > MAX_CUSTOM_MS) throw invalid('A custom range spans at most 731 days.', 'customEnd');
  } else {
    if (input.customStart || input.customEnd)
      throw invalid(`customStart and customEnd apply only with range=custom (range is ${range}).`, input.customStart ? 'customStart' : 'customEnd');
    // `until` is just after now, so a run written this millisecond is inside.
    untilMs = now + 1;
    sinceMs = untilMs - PRESET_MS[range];
  }
  const span = untilMs - sinceMs;
  const bucketMs = BUCKET_MS.find((size) => Math.ceil(span / size) <= MAX_BUCKETS) ?? BUCKET_MS[BUCKET_MS.length - 1];
  return { since: new Date(sinceMs).toISOString(), until: new Date(untilMs).toISOString(), sinceMs, untilMs, bucketMs };
}

/** The start of every bucket the window touches, oldest first. */
export function bucketStarts(window: Window): number[] {
  const starts: number[] = [];
  for (let start = Math.floor(window.sinceMs / window.bucketMs) * window.bucketMs; start < window.untilMs; start += window.bucketMs) starts.push(start);
  return starts;
}
