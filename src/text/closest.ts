import { distance } from 'fastest-levenshtein';

/**
 * The candidate a caller most likely meant ("did you mean"): an exact
 * case-insensitive match first, then the smallest edit distance within a
 * third of the input's length.
 */
export function closestName(input: string, candidates: readonly string[]): string | undefined {
  const lowered = input.toLowerCase();
  const exact = candidates.find((c) => c.toLowerCase() === lowered);
  if (exact) return exact;
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.ceil(input.length / 3)) + 1;
  for (const candidate of candidates) {
    const d = distance(lowered, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}
