/**
 * Answers kept for a short while under a key, so that work the payment
 * libraries would repeat for the same input within moments (a verification,
 * a validation, an offer) is done once. A kept answer is a promise, so a
 * concurrent second ask shares the first; a rejected one, or one `keep`
 * refuses once resolved, is dropped and asked afresh next time. At most `max`
 * answers are kept; the oldest go first.
 */
export interface RecentAnswers<T> {
  /** The answer kept for `key`, or a new one from `compute`, kept until `until(now)` (epoch ms). */
  get(key: string, compute: () => Promise<T>, until: (now: number) => number): Promise<T>;
  /** Drops the answer kept for `key`. */
  forget(key: string): void;
}

export function recentAnswers<T>(max: number, keep: (answer: T) => boolean = () => true): RecentAnswers<T> {
  const kept = new Map<string, { until: number; answer: Promise<T> }>();
  const drop = (key: string, answer: Promise<T>) => kept.get(key)?.answer === answer && kept.delete(key);
  return {
    get(key, compute, until) {
      const now = Date.now();
      const seen = kept.get(key);
      if (seen && now < seen.until) return seen.answer;
      // Oldest first: expired ones are dropped from the front (a shorter-lived one behind a longer waits for its turn or the cap).
      for (const [k, v] of kept) {
        if (now < v.until) break;
        kept.delete(k);
      }
      const answer = compute();
      kept.delete(key);
      kept.set(key, { until: until(now), answer });
      if (kept.size > max) kept.delete(kept.keys().next().value!);
      answer.then(
        (value) => keep(value) || drop(key, answer),
        () => drop(key, answer),
      );
      return answer;
    },
    forget: (key) => void kept.delete(key),
  };
}
