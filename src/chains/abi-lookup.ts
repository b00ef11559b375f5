import { getAddress } from 'viem';
import type { Config } from '../config.ts';
import { ServiceError } from '../errors.ts';
import { rateLimitedError, type RateLimiter } from '../guards/rate-limit.ts';
import { nowIso } from '../ids.ts';
import type { Store } from '../store/db.ts';
import { addressLink, type ChainCatalog, type ChainEntry, type ExplorerApi } from './catalog.ts';

export interface AbiLookupResult {
  abi: unknown[];
  /** Explorer page of the contract, or null when the chain has no explorer. */
  explorerUrl: string | null;
  /** true when served from the `abi_cache` table without asking the explorer. */
  cached: boolean;
}

export interface AbiLookup {
  /** `organizationId`: whose explorer budget a request to the explorer counts against (none for the gateway's own lookups). */
  lookup(chainId: number, address: string, organizationId?: string): Promise<AbiLookupResult>;
}

export interface AbiLookupDeps {
  store: Store;
  chains: ChainCatalog;
  config: Config;
  /**
   * Counts each organization's requests to the explorer (FLOWGATE_RATE_LIMIT_EXPLORER_LOOKUPS_PER_ORG): they spend
   * the operator's explorer key, whose own limit every tenant shares, and an unverified address is asked anew each time.
   */
  rateLimiter?: RateLimiter;
  fetch?: typeof fetch;
  /** Explorer request timeout; 10 s by default. */
  timeoutMs?: number;
  /** How many ABIs the cache keeps (MAX_CACHED_ABIS by default); past it the longest-held go first. */
  maxCachedAbis?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * The cache is shared by every tenant, and any of them can fill it with the ABIs of verified contracts (30 explorer
 * requests a minute each): it keeps the 5,000 fetched last. A real ABI is tens of KB; an explorer reply past 2 MiB is
 * refused unread rather than held in memory and stored.
 */
export const MAX_CACHED_ABIS = 5_000;
export const MAX_EXPLORER_REPLY_BYTES = 2 * 1024 * 1024;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Contract ABIs from the chain's block explorer (Etherscan v2 or Blockscout,
 * both speak `module=contract&action=getabi`), cached per chain and address.
 * Verified ABIs do not change, so cache entries never expire.
 */
export function createAbiLookup(deps: AbiLookupDeps): AbiLookup {
  const fetchImpl = deps.fetch ?? globalThis.fetch;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // Concurrent lookups of the same contract share one explorer request.
  const inFlight = new Map<string, Promise<AbiLookupResult>>();

  async function fromCache(chainId: number, address: string): Promise<AbiLookupResult | undefined> {
    const row = await deps.store
      .selectFrom('abi_cache')
      .select(['abi', 'explorer_url'])
      .where('chain_id', '=', chainId)
      .where('address', '=', address)
      .executeTakeFirst();
    if (!row) return undefined;
    return { abi: JSON.parse(row.abi) as unknown[], explorerUrl: row.explorer_url, cached: true };
  }

  const maxCached = deps.maxCachedAbis ?? MAX_CACHED_ABIS;

  async function save(chainId: number, address: string, abi: unknown[], explorerUrl: string | null): Promise<void> {
    const values = { abi: JSON.stringify(abi), explorer_url: explorerUrl, fetched_at: nowIso() };
    await deps.store
      .insertInto('abi_cache')
      .values({ chain_id: chainId, address, ...values })
      .onConflict((oc) => oc.columns(['chain_id', 'address']).doUpdateSet(values))
      .execute();
    // Past the bound, the entries fetched longest ago go (a miss is rare: at most 30 a minute per organization).
    const oldestKept = await deps.store
      .selectFrom('abi_cache')
      .select('fetched_at')
      .orderBy('fetched_at', 'desc')
      .offset(maxCached - 1)
      .limit(1)
      .executeTakeFirst();
    if (oldestKept) await deps.store.deleteFrom('abi_cache').where('fetched_at', '<', oldestKept.fetched_at).execute();
  }

  async function fetchAndCache(chain: ChainEntry, api: ExplorerApi, address: string): Promise<AbiLookupResult> {
    const abi = await fetchAbi(chain, api, address, { fetchImpl, timeoutMs, apiKey: deps.config.explorerApiKey });
    const explorerUrl = addressLink(deps.chains, chain.chainId, getAddress(address)) || null;
    await save(chain.chainId, address, abi, explorerUrl);
    return { abi, explorerUrl, cached: false };
  }

  return {
    async lookup(chainId, rawAddress, organizationId) {
      const address = typeof rawAddress === 'string' ? rawAddress.trim().toLowerCase() : '';
      if (!ADDRESS.test(address)) {
        throw new ServiceError(400, 'invalid_address', 'address must be a 0x-prefixed 20-byte hex contract address', { field: 'address' });
      }
      const chain = deps.chains.get(chainId);
      if (!chain) {
        throw new ServiceError(404, 'chain_not_found', `Chain ${chainId} is not in the catalog; call list_chains for supported chains.`, { chainId });
      }
      const api = chain.chainType === 'evm' && chain.abiAutoFetch ? deps.chains.explorerApi(chainId) : undefined;
      if (!api) {
        const why =
          chain.chainType === 'solana' ? `${chain.name} programs have no EVM ABI` : `ABIs cannot be fetched automatically on ${chain.name} (${chainId})`;
        throw new ServiceError(400, 'abi_unavailable', `${why}; pass the contract's \`abi\` explicitly.`, { chainId });
      }

      const hit = await fromCache(chainId, address);
      if (hit) return hit;

      const key = `${chainId}:${address}`;
      if (!inFlight.has(key) && organizationId && deps.rateLimiter?.enabled) {
        const decision = await deps.rateLimiter.consume('explorerLookupsPerOrganization', organizationId);
        if (!decision.allowed) {
          throw rateLimitedError('explorerLookupsPerOrganization', decision, "ABIs already fetched still answer; or pass the contract's `abi` explicitly");
        }
      }
      const pending = inFlight.get(key);
      if (pending) return pending;
      const request = fetchAndCache(chain, api, address).finally(() => inFlight.delete(key));
      inFlight.set(key, request);
      return request;
    },
  };
}

interface FetchOptions {
  fetchImpl: typeof fetch;
  timeoutMs: number;
  apiKey: string | undefined;
}

interface ExplorerReply {
  status?: unknown;
  message?: unknown;
  result?: unknown;
}

const unavailable = (chain: ChainEntry, reason: string) =>
  new ServiceError(
    502,
    'explorer_unavailable',
    `The block explorer for ${chain.name} (${chain.chainId}) ${reason}. Retry later or pass the contract's \`abi\` explicitly.`,
    {
      chainId: chain.chainId,
    },
  );

async function fetchAbi(chain: ChainEntry, api: ExplorerApi, address: string, opts: FetchOptions): Promise<unknown[]> {
  const url = new URL(api.url);
  url.searchParams.set('module', 'contract');
  url.searchParams.set('action', 'getabi');
  url.searchParams.set('address', address);
  if (api.type === 'etherscan') {
    url.searchParams.set('chainid', String(chain.chainId));
    // The key is Etherscan's: never send it to another explorer family.
    if (opts.apiKey) url.searchParams.set('apikey', opts.apiKey);
  }

  // Messages below never include the URL: it may carry the API key.
  let text: string;
  try {
    const response = await opts.fetchImpl(url, { signal: AbortSignal.timeout(opts.timeoutMs), headers: { accept: 'application/json' } });
    if (!response.ok) {
      await response.body?.cancel();
      throw unavailable(chain, `answered HTTP ${response.status}`);
    }
    text = await readCapped(response, () => unavailable(chain, `sent a reply larger than ${MAX_EXPLORER_REPLY_BYTES / 1024 / 1024} MiB`));
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
    throw unavailable(chain, timedOut ? `did not answer within ${opts.timeoutMs / 1000} s` : 'could not be reached');
  }

  let reply: ExplorerReply;
  try {
    reply = JSON.parse(text) as ExplorerReply;
  } catch {
    throw unavailable(chain, 'sent a reply that is not JSON');
  }
  if (!reply || typeof reply !== 'object') throw unavailable(chain, 'sent an unexpected reply');

  const detail = [reply.message, reply.result].filter((v): v is string => typeof v === 'string').join(': ');
  if (String(reply.status) !== '1') {
    if (/rate limit|api key|apikey|too many/i.test(detail)) throw unavailable(chain, 'refused the request (rate limit or API key)');
    const shown = scrub(detail, opts.apiKey).slice(0, 200);
    throw new ServiceError(
      404,
      'abi_not_verified',
      `No verified ABI for ${address} on ${chain.name} (${chain.chainId})${shown ? ` (explorer said: ${shown})` : ''}. Verify the contract on the explorer or pass \`abi\` explicitly.`,
      { chainId: chain.chainId, address },
    );
  }

  let abi: unknown;
  try {
    abi = typeof reply.result === 'string' ? JSON.parse(reply.result) : reply.result;
  } catch {
    throw unavailable(chain, 'sent an ABI that is not valid JSON');
  }
  if (!Array.isArray(abi)) throw unavailable(chain, 'sent an ABI that is not an array');
  return abi;
}

/** The body as text, refused (`tooLarge`) as soon as it passes MAX_EXPLORER_REPLY_BYTES, declared or streamed. */
async function readCapped(response: Response, tooLarge: () => ServiceError): Promise<string> {
  if (Number(response.headers.get('content-length') ?? 0) > MAX_EXPLORER_REPLY_BYTES) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_EXPLORER_REPLY_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const scrub = (text: string, secret: string | undefined) => (secret ? text.split(secret).join('***') : text);
