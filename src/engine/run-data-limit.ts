import { jsonLengthWithin } from './json-size.ts';

/**
 * How much JSON one run's steps may hold and log: every step's resolved input
 * and its output, counted as their JSON text (characters). Without it one run
 * of a For Each over HTTP answers of 5 MB could hold and write gigabytes (100
 * iterations: 1.5 GB of memory and a 420 MB database, then a crash of the run
 * on a string too long to make), and 32 such runs at once would take the
 * process down for every tenant. Past the limit the step that would cross it
 * fails with a message that says so; the rows that end a run (a failure, a
 * skipped node) are small and always written.
 */

/** Rows up to this size that do not report a success are written even past the limit: the run's failure is always logged. */
export const ENDING_ROW_CHARS = 16 * 1024;

export class RunDataLimitError extends Error {}

/** Stands in a row for an input that is over the limit. */
export const OMITTED_INPUT_TEXT = JSON.stringify({ _omitted: 'this input is over the run data limit' });

const megabytes = (chars: number) => `${(chars / (1024 * 1024)).toFixed(2)} MB`;
/** MB for reading, the count for the case where two sizes round alike. */
const size = (chars: number) => `${megabytes(chars)} (${chars.toLocaleString('en-US')} characters)`;

export class RunDataLimit {
  private used = 0;

  constructor(readonly maxChars: number = Infinity) {}

  /** The JSON counted so far (what the run wrote, for its organization's daily budget). */
  get usedChars(): number {
    return this.used;
  }

  /** The JSON still allowed (what a template may expand to, too). */
  get remaining(): number {
    return Math.max(0, this.maxChars - this.used);
  }

  /**
   * Throws RunDataLimitError when `value` would not fit, before any text of it is made: for a step's resolved
   * config, whose templates can hold one large answer in many places (its text would be that many copies).
   */
  check(value: unknown, what: string): void {
    if (this.maxChars === Infinity) return;
    const room = this.remaining;
    if (jsonLengthWithin(value, room) > room) throw this.refusal(what, jsonLengthWithin(value, this.maxChars * 4));
  }

  /**
   * `value` as JSON text, counted against the limit; `ending` rows (not a success, and small) always fit. Made
   * first and measured after: what is written here (outputs, and inputs already checked) is already in memory
   * about as large as its text, so only configs pay for a walk before their text is made.
   */
  serialize(value: unknown, what: string, ending = false): string {
    const text = JSON.stringify(value ?? null);
    const room = ending ? Math.max(this.remaining, ENDING_ROW_CHARS) : this.remaining;
    if (text.length > room) throw this.refusal(what, text.length);
    this.used += text.length;
    return text;
  }

  private refusal(what: string, chars: number): RunDataLimitError {
    const measured = chars === Infinity ? `over ${megabytes(this.maxChars * 4)}` : size(chars);
    return new RunDataLimitError(
      `this step's ${what} is ${measured} of JSON, and the run has ${size(this.remaining)} left of its ${megabytes(this.maxChars)} limit ` +
        `(FLOWGATE_RUN_DATA_LIMIT_BYTES: the inputs and outputs of all of a run's steps together). ` +
        `Fetch or pass on less per step (a narrower query, a page at a time, only the fields a later step uses), ` +
        `or lower the For Each's maxIterations.`,
    );
  }
}
