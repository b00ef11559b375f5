/**
 * Deeply frozen values: data that cannot change after it is built (the
 * action registry, the chain catalog's lists). Frozen so a consumer cannot
 * change it for everyone else by editing what it was handed; and because it
 * cannot change, work derived from it (a schema check, a serialization) can
 * be done once and kept for as long as the value lives.
 */

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** True when neither the value nor anything reachable from it can be changed (primitives are). */
export function isDeepFrozen(value: unknown, seen = new Set<object>()): boolean {
  if (!value || typeof value !== 'object' || seen.has(value)) return true;
  if (!Object.isFrozen(value)) return false;
  seen.add(value);
  return Object.values(value).every((inner) => isDeepFrozen(inner, seen));
}

/**
 * `derive(value)` computed once per deeply frozen object value and kept while it lives; computed afresh
 * for anything else (a mutable value could change between calls). `kept` tells derive that its answer
 * will be shared by every later caller (so it should be immutable).
 */
export function onceForFrozen<K extends object, V>(derive: (value: K, kept: boolean) => V): (value: K) => V {
  const kept = new WeakMap<K, V>();
  // Only values found deeply frozen are ever kept, so a hit needs no second check.
  return (value) => {
    const hit = kept.get(value);
    if (hit !== undefined) return hit;
    if (!isDeepFrozen(value)) return derive(value, false);
    const derived = derive(value, true);
    kept.set(value, derived);
    return derived;
  };
}
