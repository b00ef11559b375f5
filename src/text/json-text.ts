import { randomBytes } from 'node:crypto';

/**
 * JSON text already made, such as a stored log row's input or output, that an
 * answer holds as it is. stringifyJson writes it into the answer's JSON
 * without parsing it: parsing a run's 15 MB of stored logs and making them
 * into text again held the event loop for about half a second per read of
 * GET .../logs. Anywhere else JSON.stringify meets one (an SDK transport), its
 * toJSON parses it, so every path writes the same JSON.
 */
export class JsonText {
  constructor(readonly text: string) {}

  toJSON(): unknown {
    if (!splicing) return JSON.parse(this.text);
    splicing.marker ??= `\u0000${randomBytes(12).toString('hex')}:`;
    return `${splicing.marker}${splicing.texts.push(this.text) - 1}`;
  }
}

/** A stored JSON text column (null stays null) as a value an answer holds unparsed. */
export const storedJson = (text: string | null): JsonText | null => (text === null ? null : new JsonText(text));

/** The stringifyJson call under way: the texts its JsonText values stand for, in order. */
let splicing: { marker?: string; texts: string[] } | undefined;

/**
 * JSON.stringify of `value` with every JsonText in it written as its text. Each
 * is first written as a marker string (a NUL, a nonce fresh to this call, its
 * number), then replaced: no value can spell a marker it has not seen.
 */
export function stringifyJson(value: object): string {
  const outer = splicing;
  const current: { marker?: string; texts: string[] } = { texts: [] };
  splicing = current;
  let text: string;
  try {
    text = JSON.stringify(value);
  } finally {
    splicing = outer;
  }
  if (current.marker === undefined) return text;
  // A marker as JSON writes it: "\u0000<nonce>:<n>", the NUL escaped.
  const opening = JSON.stringify(current.marker).slice(0, -1).replace(/\\/g, '\\\\');
  return text.replace(new RegExp(`${opening}(\\d+)"`, 'g'), (_, n: string) => current.texts[Number(n)]!);
}
