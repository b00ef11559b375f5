/**
 * How long `JSON.stringify(value)` would be, counted without building the
 * text, or Infinity as soon as the count passes `limit`. A value that holds
 * one large object in many places (a step config quoting one 5 MB answer in
 * 200 fields) is counted once per place, as its text would hold it, so it is
 * refused before a gigabyte of text is made. An estimate: escapes inside
 * strings are not counted. Iterative, so no depth overflows its stack, and a
 * cycle ends at the limit instead of looping.
 */
export function jsonLengthWithin(value: unknown, limit: number): number {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    let current = stack.pop();
    if (current !== null && typeof current === 'object' && typeof (current as { toJSON?: unknown }).toJSON === 'function') {
      current = (current as { toJSON(): unknown }).toJSON();
    }
    switch (typeof current) {
      case 'string':
        total += current.length + 2;
        break;
      case 'number':
      case 'bigint':
        total += String(current).length;
        break;
      case 'boolean':
        total += current ? 4 : 5;
        break;
      case 'object':
        if (current === null) {
          total += 4;
        } else if (Array.isArray(current)) {
          total += 2 + Math.max(0, current.length - 1);
          for (const item of current) stack.push(item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : item);
        } else {
          // {} and, per member written, "key": and a comma between members.
          total += 2;
          let first = true;
          for (const key in current) {
            if (!Object.prototype.hasOwnProperty.call(current, key)) continue;
            const item = (current as Record<string, unknown>)[key];
            if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
            total += key.length + (first ? 3 : 4);
            first = false;
            stack.push(item);
          }
        }
        break;
      default:
        // undefined, a function or a symbol at the top: JSON.stringify gives undefined, written as null.
        total += 4;
    }
    if (total > limit) return Infinity;
  }
  return total;
}
