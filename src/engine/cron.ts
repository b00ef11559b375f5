import { Cron } from 'croner';
import { suggest } from '../text/suggest.ts';

/**
 * Cron expressions for Schedule triggers, parsed by croner. Save-time
 * validation, validate_cron and the scheduler all go through parseCron, so
 * "valid" means the same thing everywhere.
 */

export const DEFAULT_TIMEZONE = 'UTC';

/** croner's nicknames; anything else must be 5 fields, or 6 with leading seconds. */
const NICKNAMES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly'] as const;

export type CronResult =
  | {
      ok: true;
      /** Whitespace-collapsed expression as it is scheduled. */
      expression: string;
      /** Canonical IANA name (`europe/berlin` becomes `Europe/Berlin`). */
      timezone: string;
      /** The next `count` run times strictly after `from` (default now). */
      nextRuns(count: number, from?: Date): Date[];
    }
  | { ok: false; code: 'invalid_cron' | 'invalid_timezone'; message: string };

/** The canonical IANA name of a time zone, or undefined when the runtime does not know it. */
export function canonicalTimezone(timezone: string): string | undefined {
  const name = timezone.trim();
  if (!name) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

let zoneNames: string[] | undefined;
const knownTimezones = (): string[] => (zoneNames ??= ['UTC', ...Intl.supportedValuesOf('timeZone')]);

export function suggestTimezone(input: string): string | undefined {
  return suggest(input, knownTimezones());
}

export function timezoneMessage(timezone: string): string {
  const near = suggestTimezone(timezone);
  return `Unknown time zone ${JSON.stringify(timezone)}: use an IANA name such as "Europe/Berlin", "America/New_York" or "UTC"${near ? ` (did you mean "${near}"?)` : ''}.`;
}

/**
 * Quartz-style `?` ("no specific value") is accepted in the day fields and
 * means `*` there. croner would otherwise replace it with the current time,
 * so the same expression would schedule differently depending on when it was saved.
 */
function normalizeFields(expression: string): { fields?: string; error?: string } {
  const collapsed = expression.trim().replace(/\s+/g, ' ');
  if (!collapsed) return { error: 'The cron expression is empty. Use 5 fields "minute hour day-of-month month day-of-week", e.g. "*/15 * * * *".' };
  if (collapsed.startsWith('@')) {
    const lower = collapsed.toLowerCase();
    if ((NICKNAMES as readonly string[]).includes(lower)) return { fields: lower };
    return { error: `Unsupported nickname ${JSON.stringify(collapsed)}; supported: ${NICKNAMES.join(', ')}.` };
  }
  const parts = collapsed.split(' ');
  if (parts.length !== 5 && parts.length !== 6) {
    return {
      error: `A cron expression has 5 fields "minute hour day-of-month month day-of-week" (or 6 with leading seconds); got ${parts.length} in ${JSON.stringify(collapsed)}.`,
    };
  }
  const dayFields = new Set([parts.length - 3, parts.length - 1]);
  for (let i = 0; i < parts.length; i++) {
    if (!parts[i].includes('?')) continue;
    if (!dayFields.has(i)) return { error: `"?" is only allowed in the day-of-month and day-of-week fields (got ${JSON.stringify(collapsed)}).` };
    if (parts[i] !== '?') return { error: `"?" must stand alone in its field (got ${JSON.stringify(parts[i])}).` };
    parts[i] = '*';
  }
  return { fields: parts.join(' ') };
}

const croneReason = (error: unknown) => (error instanceof Error ? error.message : String(error)).replace(/^CronPattern:\s*/i, '');

export function parseCron(expression: string, timezone?: string): CronResult {
  let zone = DEFAULT_TIMEZONE;
  if (timezone !== undefined && timezone.trim() !== '') {
    const canonical = canonicalTimezone(timezone);
    if (!canonical) return { ok: false, code: 'invalid_timezone', message: timezoneMessage(timezone) };
    zone = canonical;
  }

  const { fields, error } = normalizeFields(expression);
  if (!fields) return { ok: false, code: 'invalid_cron', message: error! };

  let job: Cron;
  try {
    // paused and without a callback: nothing is scheduled, the instance only computes run times.
    job = new Cron(fields, { timezone: zone, paused: true });
  } catch (cause) {
    return { ok: false, code: 'invalid_cron', message: `Invalid cron expression ${JSON.stringify(fields)}: ${croneReason(cause)}.` };
  }
  const never = {
    ok: false as const,
    code: 'invalid_cron' as const,
    message: `The cron expression ${JSON.stringify(fields)} never fires (for example a day that does not exist, like February 30 or the 31st of a month of 30 days).`,
  };
  // croner searches day by day for a match; for some days that never come (`31 2,4,6,9,11`) it recursed until the
  // stack overflowed, and the anonymous validate-cron answered 500. A search that throws found no run.
  const runs = (count: number, from?: Date) => {
    try {
      return job.nextRuns(Math.max(0, Math.floor(count)), from);
    } catch {
      return [];
    }
  };
  if (runs(1).length === 0) return never;

  return { ok: true, expression: fields, timezone: zone, nextRuns: runs };
}
