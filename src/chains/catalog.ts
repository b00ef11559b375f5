import { distance as editDistance } from 'fastest-levenshtein';
import type { Config } from '../config.ts';
import { ServiceError } from '../errors.ts';
import { deepFreeze } from '../immutable.ts';
import { CHAIN_SPECS, EXPLORER_ADDRESS_PATH, type ChainSpec, type ChainStatus, type ChainType, type ExplorerApi, type ExplorerApiType } from './chain-data.ts';

export type { ChainStatus, ChainType, ExplorerApi, ExplorerApiType } from './chain-data.ts';

/** A chain as every endpoint returns it (SPEC.md "Chain"). RPC URLs are never part of it. */
export interface PublicChain {
  id: string;
  chainId: number;
  name: string;
  symbol: string;
  chainType: ChainType;
  explorerUrl: string | null;
  explorerAddressPath: string | null;
  explorerApiUrl: string | null;
  explorerApiType: ExplorerApiType | null;
  isTestnet: boolean;
  isEnabled: boolean;
  usePrivateMempoolRpc: boolean;
}

/** The internal view: the public fields plus what only the gateway itself may use. */
export interface ChainEntry extends PublicChain {
  status: ChainStatus;
  /** Lowercase aliases, including `id`. */
  aliases: readonly string[];
  defaultRpcUrl: string;
  abiAutoFetch: boolean;
}

export interface ChainCatalog {
  /** The same deeply frozen list on every call. */
  list(opts?: { includeDisabled?: boolean }): readonly PublicChain[];
  get(chainId: number): ChainEntry | undefined;
  /** A numeric id (number or decimal string) or a name alias, case-insensitive. */
  resolve(ref: string | number): ChainEntry | undefined;
  status(chainId: number): ChainStatus | undefined;
  /** Configured RPC URL first, then the default. Internal only: never return it from an endpoint. */
  rpcUrl(chainId: number): string | undefined;
  /** Configured explorer API first, then the catalog's; undefined when the chain has neither. */
  explorerApi(chainId: number): ExplorerApi | undefined;
}

function toEntry(spec: ChainSpec, config: Config): ChainEntry {
  const isEnabled = spec.enabled === 'devnet' ? config.devnet === 'auto' || Boolean(config.rpcUrls[spec.chainId]) : spec.enabled;
  return Object.freeze({
    id: spec.id,
    chainId: spec.chainId,
    name: spec.name,
    symbol: spec.symbol,
    chainType: spec.chainType,
    explorerUrl: spec.explorerUrl,
    explorerAddressPath: spec.explorerUrl ? EXPLORER_ADDRESS_PATH : null,
    // The catalog's own API, not a configured override: overrides may be private endpoints.
    explorerApiUrl: spec.explorerApi?.url ?? null,
    explorerApiType: spec.explorerApi?.type ?? null,
    isTestnet: spec.isTestnet,
    isEnabled,
    // No private-mempool routing exists on this gateway (writes with usePrivateMempool and strict are refused),
    // so no chain claims the capability; it becomes true per chain once a private RPC is configured and routed.
    usePrivateMempoolRpc: false,
    status: spec.status,
    aliases: Object.freeze([...new Set([spec.id, ...spec.aliases].map((a) => a.toLowerCase()))]),
    defaultRpcUrl: spec.defaultRpcUrl,
    abiAutoFetch: spec.abiAutoFetch ?? true,
  });
}

/** Picks the public fields by name so internal ones (RPC URL, aliases) can never leak through a spread. */
export function toPublicChain(entry: ChainEntry): PublicChain {
  return {
    id: entry.id,
    chainId: entry.chainId,
    name: entry.name,
    symbol: entry.symbol,
    chainType: entry.chainType,
    explorerUrl: entry.explorerUrl,
    explorerAddressPath: entry.explorerAddressPath,
    explorerApiUrl: entry.explorerApiUrl,
    explorerApiType: entry.explorerApiType,
    isTestnet: entry.isTestnet,
    isEnabled: entry.isEnabled,
    usePrivateMempoolRpc: entry.usePrivateMempoolRpc,
  };
}

export function createChainCatalog(config: Config): ChainCatalog {
  const entries = CHAIN_SPECS.map((spec) => toEntry(spec, config));
  const byId = new Map<number, ChainEntry>();
  const byAlias = new Map<string, ChainEntry>();
  for (const entry of entries) {
    if (byId.has(entry.chainId)) throw new Error(`chain-data: duplicate chain id ${entry.chainId}`);
    byId.set(entry.chainId, entry);
    for (const alias of entry.aliases) {
      const taken = byAlias.get(alias);
      if (taken && taken !== entry) throw new Error(`chain-data: alias "${alias}" used by ${taken.chainId} and ${entry.chainId}`);
      byAlias.set(alias, entry);
    }
  }

  const get = (chainId: number) => byId.get(chainId);
  // Entries are fixed at start, so both lists are built once; deeply frozen, so what is derived from them
  // per call (the tool's output check, the serialized answer: src/immutable.ts) is kept too.
  const all = deepFreeze(entries.map(toPublicChain));
  const enabled = deepFreeze(entries.filter((e) => e.isEnabled).map(toPublicChain));

  return {
    list(opts = {}) {
      return opts.includeDisabled ? all : enabled;
    },
    get,
    resolve(ref) {
      if (typeof ref === 'number') return Number.isSafeInteger(ref) ? get(ref) : undefined;
      const text = ref.trim().toLowerCase();
      if (/^\d+$/.test(text)) return get(Number(text));
      return byAlias.get(text);
    },
    status: (chainId) => get(chainId)?.status,
    rpcUrl(chainId) {
      const entry = get(chainId);
      if (!entry) return undefined;
      // Read config on each call so a devnet started after the catalog is picked up.
      return config.rpcUrls[chainId] ?? entry.defaultRpcUrl;
    },
    explorerApi(chainId) {
      const entry = get(chainId);
      if (!entry) return undefined;
      const override = config.explorerApiUrls[chainId];
      // An override on a chain without a known family speaks the plain (Blockscout-style) protocol.
      if (override) return { url: override, type: entry.explorerApiType ?? 'blockscout' };
      if (entry.explorerApiUrl && entry.explorerApiType) return { url: entry.explorerApiUrl, type: entry.explorerApiType };
      return undefined;
    },
  };
}

/** The explorer page of an address, or '' when the chain has no explorer. */
export function addressLink(catalog: ChainCatalog, chainId: number, address: string): string {
  const chain = catalog.get(chainId);
  return chain?.explorerUrl ? `${chain.explorerUrl}${chain.explorerAddressPath}${address}` : '';
}

/** The explorer page of a transaction, or '' when the chain has no explorer. */
export function transactionLink(catalog: ChainCatalog, chainId: number, hash: string): string {
  const explorer = catalog.get(chainId)?.explorerUrl;
  return explorer ? `${explorer}/tx/${hash}` : '';
}

/** A few well-known names for error messages. */
const EXAMPLE_NAMES = ['ethereum', 'base', 'arbitrum', 'optimism', 'polygon', 'sepolia', 'base-sepolia', 'solana'];

/** The closest alias to an unknown name, when it is close enough to be a typo. */
export function suggestChain(catalog: ChainCatalog, ref: string | number): ChainEntry | undefined {
  const text = String(ref).trim().toLowerCase();
  if (!text || /^\d+$/.test(text)) return undefined;
  let best: { entry: ChainEntry; distance: number } | undefined;
  for (const chain of catalog.list({ includeDisabled: true })) {
    const entry = catalog.get(chain.chainId)!;
    for (const alias of entry.aliases) {
      const distance = alias.startsWith(text) || text.startsWith(alias) ? Math.abs(alias.length - text.length) : editDistance(text, alias);
      if (!best || distance < best.distance) best = { entry, distance };
    }
  }
  return best && best.distance <= Math.max(2, Math.floor(text.length / 3)) ? best.entry : undefined;
}

/** Human text for an unknown chain reference: a "did you mean" and a few valid names. */
export function unknownChainMessage(catalog: ChainCatalog, ref: string | number): string {
  const suggestion = suggestChain(catalog, ref);
  const hint = suggestion ? ` Did you mean "${suggestion.id}" (${suggestion.chainId})?` : '';
  const examples = EXAMPLE_NAMES.map((name) => `${name} (${catalog.resolve(name)!.chainId})`).join(', ');
  return `Unsupported chain ${JSON.stringify(ref)}.${hint} Valid chains include ${examples}; call list_chains (GET /api/chains) for the full list.`;
}

/** Resolves a chain reference from caller input, or throws 400 `unsupported_chain`. */
export function resolveChainOrThrow(catalog: ChainCatalog, ref: string | number): ChainEntry {
  const entry = catalog.resolve(ref);
  if (entry) return entry;
  const suggestion = suggestChain(catalog, ref);
  throw new ServiceError(400, 'unsupported_chain', unknownChainMessage(catalog, ref), {
    chain: ref,
    ...(suggestion ? { suggestion: suggestion.id, suggestedChainId: suggestion.chainId } : {}),
  });
}
