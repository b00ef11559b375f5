import { notFound } from '../errors.ts';
import { protocolActionDefinitions } from './index.ts';
import { suggest } from '../text/suggest.ts';
import type { ActionDefinition } from './types.ts';

/**
 * Finds protocol actions by intent ("supply usdc on base", "health factor").
 * Plain term matching over names, descriptions, field names and keywords;
 * a term that names a chain narrows to actions deployed there instead.
 */

const STOP_WORDS = new Set(['a', 'an', 'and', 'at', 'for', 'from', 'in', 'into', 'my', 'of', 'on', 'the', 'to', 'with', 'i', 'me', 'want']);

export interface ProtocolSearch {
  query?: string;
  protocol?: string;
  /** Chain id for a term that names a chain (`base`, `8453`), else undefined. */
  resolveChain?: (term: string) => number | undefined;
}

export interface ProtocolSearchResult {
  actions: ActionDefinition[];
  /** Chains named in the query, which narrowed the results. */
  chainIds: number[];
}

export interface ProtocolSummary {
  protocol: string;
  name: string;
  contract: string;
  chainIds: number[];
  actionTypes: string[];
}

export function protocolSummaries(): ProtocolSummary[] {
  const byProtocol = new Map<string, ProtocolSummary>();
  for (const action of protocolActionDefinitions()) {
    if (action.integration === null || !action.protocol) continue;
    const p = action.protocol;
    const entry = byProtocol.get(p.protocol) ?? {
      protocol: p.protocol,
      name: p.protocolName,
      contract: p.contract,
      chainIds: Object.keys(p.addresses).map(Number),
      actionTypes: [],
    };
    entry.actionTypes.push(action.actionType);
    byProtocol.set(p.protocol, entry);
  }
  return [...byProtocol.values()];
}

/** Text an action is found by, strongest first: its key, then its names, then everything else. */
function searchText(action: ActionDefinition): [strong: string, named: string, weak: string] {
  const p = action.integration !== null ? action.protocol : undefined;
  const strong = [action.actionType, p?.functionName ?? ''].join(' ');
  const named = [action.label, ...(p?.keywords ?? [])].join(' | ');
  const weak = [action.description, ...Object.keys(action.requiredFields), ...Object.keys(action.optionalFields), ...Object.keys(action.outputFields)].join(
    ' ',
  );
  return [strong.toLowerCase(), named.toLowerCase(), weak.toLowerCase()];
}

function score(action: ActionDefinition, terms: string[]): number {
  const [strong, named, weak] = searchText(action);
  let total = 0;
  for (const term of terms) {
    if (strong.includes(term)) total += 3;
    else if (named.includes(term)) total += 2;
    else if (weak.includes(term)) total += 1;
  }
  // The whole phrase ("health factor") in a name or keyword beats the same words scattered.
  if (terms.length > 1 && named.includes(terms.join(' '))) total += 2;
  return total;
}

export function searchProtocolActions(search: ProtocolSearch): ProtocolSearchResult {
  let candidates = protocolActionDefinitions();

  if (search.protocol !== undefined && search.protocol.trim() !== '') {
    const wanted = search.protocol.trim().toLowerCase();
    const known = protocolSummaries().map((p) => p.protocol);
    const match = known.find((p) => p === wanted);
    if (!match) {
      const guess = suggest(wanted, known);
      throw notFound(`Unknown protocol "${search.protocol}".${guess ? ` Did you mean "${guess}"?` : ''} Known protocols: ${known.join(', ')}.`, {
        ...(guess ? { suggestion: guess } : {}),
        protocols: known,
      });
    }
    candidates = candidates.filter((a) => a.actionType.startsWith(`${match}/`));
  }

  const terms = (search.query ?? '')
    .toLowerCase()
    .split(/[^a-z0-9-]+/)
    .filter((t) => t.length > 1 && !STOP_WORDS.has(t));

  const chainIds: number[] = [];
  const textTerms: string[] = [];
  for (const term of terms) {
    const chainId = search.resolveChain?.(term);
    if (chainId !== undefined) chainIds.push(chainId);
    else textTerms.push(term);
  }

  if (chainIds.length) {
    candidates = candidates.filter((a) => a.integration !== null && a.protocol && chainIds.some((id) => a.protocol!.addresses[id] !== undefined));
  }
  if (!textTerms.length) return { actions: candidates, chainIds };

  const scored = candidates
    .map((action) => ({ action, score: score(action, textTerms) }))
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score);
  return { actions: scored.map((s) => s.action), chainIds };
}
