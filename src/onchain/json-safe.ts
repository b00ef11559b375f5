/** A viem result as JSON: bigints become decimal strings, recursively. */
export const jsonSafe = (value: unknown): unknown =>
  typeof value === 'bigint'
    ? value.toString()
    : Array.isArray(value)
      ? value.map(jsonSafe)
      : value && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]))
        : value;
