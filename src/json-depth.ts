/**
 * Nesting depth of JSON values. Request bodies are refused above
 * MAX_JSON_DEPTH when they are parsed (REST and MCP alike), so no reader
 * further in ever meets a value deep enough to overflow its stack.
 */

/** Levels of objects/arrays a request body may nest (the body itself is level 1). */
export const MAX_JSON_DEPTH = 64;

/** True when `value` nests containers deeper than `limit` (the value itself is depth 1). Iterative: no stack to overflow. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (!current || typeof current !== 'object') continue;
    if (depth > limit) return true;
    for (const inner of Object.values(current)) if (inner && typeof inner === 'object') stack.push([inner, depth + 1]);
  }
  return false;
}

export const tooDeepMessage = (what: string) =>
  `${what} nests objects or arrays more than ${MAX_JSON_DEPTH} levels deep; the limit is ${MAX_JSON_DEPTH}. Flatten it.`;
