import { distance } from 'fastest-levenshtein';

/**
 * "Did you mean" for names callers get slightly wrong: agents send `condition`
 * for `Condition`, `web3/readcontract` for `web3/read-contract`, `list_chain`
 * for `list_chains`. Used for registry keys, tool names and config fields.
 */

/** Case, spaces, dashes and underscores do not distinguish keys. */
const loose = (s: string) => s.toLowerCase().replace(/[\s_-]+/g, '');
const slugOf = (key: string) => (key.includes('/') ? key.slice(key.indexOf('/') + 1) : key);

/**
 * The candidate an input most likely meant, or undefined when nothing is close.
 * Order: exact, case-insensitive, separator-insensitive, unique prefix,
 * unique bare-slug or bare-plugin match, then the smallest edit distance within about a third of the input's length.
 */
export function suggest(input: string, candidates: readonly string[]): string | undefined {
  const raw = input.trim();
  if (!raw) return undefined;
  if (candidates.includes(raw)) return raw;

  const lower = raw.toLowerCase();
  const caseMatch = candidates.find((c) => c.toLowerCase() === lower);
  if (caseMatch) return caseMatch;

  const key = loose(raw);
  const looseMatch = candidates.find((c) => loose(c) === key);
  if (looseMatch) return looseMatch;

  // A unique candidate the input begins, e.g. `aave` for `aave-v3`.
  if (key.length >= 3) {
    const prefixed = candidates.filter((c) => loose(c).startsWith(key));
    if (prefixed.length === 1) return prefixed[0];
  }

  if (!raw.includes('/')) {
    const slugMatches = candidates.filter((c) => c.includes('/') && loose(slugOf(c)) === key);
    if (slugMatches.length === 1) return slugMatches[0];
    // A bare plugin name with a single action, e.g. `math` for `math/aggregate`.
    const pluginMatches = candidates.filter((c) => c.includes('/') && loose(c.slice(0, c.indexOf('/'))) === key);
    if (pluginMatches.length === 1) return pluginMatches[0];
  }

  const threshold = Math.max(1, Math.min(4, Math.floor(key.length / 3)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(key, loose(candidate));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bestDistance <= threshold ? best : undefined;
}
