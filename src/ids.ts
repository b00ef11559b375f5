import { customAlphabet, nanoid } from 'nanoid';
import { sharedNow } from './store/clock.ts';

/** Ids start with a letter: one starting with "-" reads as a flag to every command line (`flowgate run -x…`). */
const firstLetter = customAlphabet('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 1);

/**
 * A 21-character URL-safe random id (the spec's opaque id length). nanoid
 * draws from a pooled buffer of random bytes: one system call per many ids,
 * where a `randomBytes` call per id cost the engine noticeably per step.
 */
export const newId = (): string => firstLetter() + nanoid(20);

/** The URL-safe characters in ASCII order, so ids built from them sort as their numbers do. */
const SORTED_ALPHABET = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
const randomTail = customAlphabet(SORTED_ALPHABET, 13);
const TIME_OFFSET = SORTED_ALPHABET.indexOf('A') * 64 ** 7;

/**
 * An id of the same shape (21 URL-safe characters, still opaque to clients)
 * that starts with the creation time in milliseconds (8 characters), followed
 * by 78 random bits. For the rows written at run rate (executions and their
 * log entries): a new key lands at the right edge of its primary-key index
 * instead of a random page, so a commit dirties far fewer pages.
 */
export function newSortableId(now = Date.now()): string {
  let time = '';
  // Offset so the first character is a letter ("A" until the year 2109), never "-": ids must not read as command-line flags.
  for (let rest = now + TIME_OFFSET, i = 0; i < 8; i++, rest = Math.floor(rest / 64)) time = SORTED_ALPHABET[rest % 64] + time;
  return time + randomTail();
}

/** Now on the clock instances sharing a database agree on (src/store/clock.ts), as stored. */
export const nowIso = () => new Date(sharedNow()).toISOString();
