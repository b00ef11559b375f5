import { describe, expect, it } from 'vitest';
import { JsonText, stringifyJson } from '../src/text/json-text.ts';

/**
 * Stored JSON text written into answers unparsed (GET .../logs, get_execution
 * with truncateData=false): the answer must be the JSON that parsing it and
 * writing it again would give, whatever the stored values hold.
 */

const tricky = [
  { text: 'plain', n: 1.5, list: [null, true, { nested: 'x' }] },
  'é 😀 \u2028 \u2029 "quoted" \\ back\\slash',
  // A value that spells what a marker looks like, NUL and all: it must stay a string.
  `\u0000${'0'.repeat(24)}:0`,
  null,
  [],
  12,
];

describe('stringifyJson', () => {
  it('writes stored JSON text as JSON.stringify writes the parsed value, wherever it sits', () => {
    const stored = tricky.map((value) => JSON.stringify(value));
    const answer = { logs: stored.map((text, i) => ({ id: `r${i}`, input: new JsonText(text), output: new JsonText(text) })), count: stored.length };
    const parsed = { logs: stored.map((text, i) => ({ id: `r${i}`, input: JSON.parse(text), output: JSON.parse(text) })), count: stored.length };
    expect(stringifyJson(answer)).toBe(JSON.stringify(parsed));
  });

  it('leaves alone a value that copies a marker it has not seen', () => {
    const forged = { a: new JsonText('{"real":1}'), b: '\u0000aaaaaaaaaaaaaaaaaaaaaaaa:0' };
    expect(JSON.parse(stringifyJson(forged))).toEqual({ a: { real: 1 }, b: '\u0000aaaaaaaaaaaaaaaaaaaaaaaa:0' });
  });

  it('answers as JSON.stringify with no stored text in the value, and JSON.stringify alone parses stored text', () => {
    const value = { a: [1, 'two', { three: 3 }] };
    expect(stringifyJson(value)).toBe(JSON.stringify(value));
    expect(JSON.stringify({ stored: new JsonText('{"x":[1,2]}') })).toBe('{"stored":{"x":[1,2]}}');
  });

  it('splices each call its own texts when one is made inside another (a toJSON that stringifies)', () => {
    const inner = { toJSON: () => stringifyJson({ inner: new JsonText('"in"') }) };
    expect(JSON.parse(stringifyJson({ outer: new JsonText('"out"'), inner }))).toEqual({ outer: 'out', inner: '{"inner":"in"}' });
  });
});
