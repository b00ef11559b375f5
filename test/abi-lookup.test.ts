import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAbiLookup, type AbiLookup } from '../src/chains/abi-lookup.ts';
import { createChainCatalog } from '../src/chains/catalog.ts';
import { loadConfig } from '../src/config.ts';
import { ServiceError } from '../src/errors.ts';
import { migrate, openSqliteStore, type Store } from '../src/store/db.ts';
import { API_KEY, ERC20_ABI, startExplorer, UNVERIFIED, VERIFIED } from './helpers/explorer.ts';

async function expectServiceError(promise: Promise<unknown>, status: number, code: string): Promise<ServiceError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServiceError);
  expect((error as ServiceError).status).toBe(status);
  expect((error as ServiceError).code).toBe(code);
  return error as ServiceError;
}

describe('ABI lookup against a local explorer', () => {
  let explorer: Awaited<ReturnType<typeof startExplorer>>;
  let dataDir: string;
  let store: Store;
  let lookup: AbiLookup;
  let config: ReturnType<typeof loadConfig>;

  beforeAll(async () => {
    explorer = await startExplorer();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-abi-'));
    config = loadConfig({
      FLOWGATE_DATA_DIR: dataDir,
      FLOWGATE_EXPLORER_API_KEY: API_KEY,
      FLOWGATE_EXPLORER_API_URL_8453: `${explorer.url}/api`,
      FLOWGATE_EXPLORER_API_URL_50312: `${explorer.url}/api`,
      FLOWGATE_EXPLORER_API_URL_42161: `${explorer.url}/garbage`,
      FLOWGATE_EXPLORER_API_URL_10: `${explorer.url}/bad-abi`,
      FLOWGATE_EXPLORER_API_URL_137: `${explorer.url}/bad-key`,
      FLOWGATE_EXPLORER_API_URL_130: `${explorer.url}/down`,
      FLOWGATE_EXPLORER_API_URL_1301: `${explorer.url}/hang`,
      FLOWGATE_EXPLORER_API_URL_5042: `${explorer.url}/api`,
      FLOWGATE_EXPLORER_API_URL_11155111: `${explorer.url}/huge`,
      FLOWGATE_EXPLORER_API_URL_84532: `${explorer.url}/any`,
    });
    store = openSqliteStore(path.join(dataDir, 'flowgate.sqlite'));
    await migrate(store);
    lookup = createAbiLookup({ store, chains: createChainCatalog(config), config, timeoutMs: 300 });
  });

  afterAll(async () => {
    await store?.destroy();
    explorer?.server.closeAllConnections();
    await new Promise((resolve) => explorer?.server.close(resolve));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('fetches a verified ABI, then serves it from the cache', async () => {
    const before = explorer.requests.length;
    const first = await lookup.lookup(8453, VERIFIED);
    expect(first).toEqual({ abi: ERC20_ABI, explorerUrl: `https://basescan.org/address/${VERIFIED}`, cached: false });
    expect(explorer.requests.length).toBe(before + 1);

    const request = explorer.requests.at(-1)!;
    expect(request.searchParams.get('chainid')).toBe('8453');
    expect(request.searchParams.get('apikey')).toBe(API_KEY);
    expect(request.searchParams.get('address')).toBe(VERIFIED.toLowerCase());

    const second = await lookup.lookup(8453, VERIFIED.toUpperCase().replace('0X', '0x'));
    expect(second).toEqual({ ...first, cached: true });
    expect(explorer.requests.length).toBe(before + 1);

    const row = await store.selectFrom('abi_cache').selectAll().where('chain_id', '=', 8453).executeTakeFirstOrThrow();
    expect(row.address).toBe(VERIFIED.toLowerCase());
    expect(JSON.parse(row.abi)).toEqual(ERC20_ABI);
  });

  it('shares one explorer request between concurrent lookups', async () => {
    const before = explorer.requests.length;
    const [a, b] = await Promise.all([lookup.lookup(50312, VERIFIED), lookup.lookup(50312, VERIFIED)]);
    expect(a.abi).toEqual(ERC20_ABI);
    expect(b.abi).toEqual(ERC20_ABI);
    expect(explorer.requests.length).toBe(before + 1);
    // Blockscout gets neither the Etherscan chainid parameter nor the Etherscan key.
    const request = explorer.requests.at(-1)!;
    expect(request.searchParams.has('chainid')).toBe(false);
    expect(request.searchParams.has('apikey')).toBe(false);
  });

  it('reports an unverified contract as 404 abi_not_verified and caches nothing', async () => {
    const error = await expectServiceError(lookup.lookup(8453, UNVERIFIED), 404, 'abi_not_verified');
    expect(error.message).toMatch(/not verified/i);
    expect(error.message).toMatch(/pass `abi`/);
    const before = explorer.requests.length;
    await expectServiceError(lookup.lookup(8453, UNVERIFIED), 404, 'abi_not_verified');
    expect(explorer.requests.length).toBe(before + 1);
  });

  it('refuses a malformed address with 400 invalid_address', async () => {
    const before = explorer.requests.length;
    for (const address of ['0x1234', 'hello', `${VERIFIED}00`, VERIFIED.slice(2)]) {
      await expectServiceError(lookup.lookup(8453, address), 400, 'invalid_address');
    }
    expect(explorer.requests.length).toBe(before);
  });

  it('answers 404 chain_not_found for a chain outside the catalog', async () => {
    await expectServiceError(lookup.lookup(56, VERIFIED), 404, 'chain_not_found');
  });

  it('answers 400 abi_unavailable where ABIs cannot be fetched, even with an explorer configured', async () => {
    const before = explorer.requests.length;
    const arc = await expectServiceError(lookup.lookup(5042, VERIFIED), 400, 'abi_unavailable');
    expect(arc.message).toMatch(/pass the contract's `abi` explicitly/);
    await expectServiceError(lookup.lookup(101, VERIFIED), 400, 'abi_unavailable');
    await expectServiceError(lookup.lookup(4217, VERIFIED), 400, 'abi_unavailable');
    expect(explorer.requests.length).toBe(before);
  });

  it('answers 502 explorer_unavailable for garbage, bad ABIs, HTTP errors and timeouts', async () => {
    await expectServiceError(lookup.lookup(42161, VERIFIED), 502, 'explorer_unavailable');
    await expectServiceError(lookup.lookup(10, VERIFIED), 502, 'explorer_unavailable');
    await expectServiceError(lookup.lookup(130, VERIFIED), 502, 'explorer_unavailable');
    const timeout = await expectServiceError(lookup.lookup(1301, VERIFIED), 502, 'explorer_unavailable');
    expect(timeout.message).toMatch(/did not answer/);
  });

  it('refuses an explorer reply past 2 MiB while it streams, and caches nothing', async () => {
    const error = await expectServiceError(lookup.lookup(11155111, VERIFIED), 502, 'explorer_unavailable');
    expect(error.message).toContain('larger than 2 MiB');
    expect(await store.selectFrom('abi_cache').selectAll().where('chain_id', '=', 11155111).execute()).toEqual([]);
  });

  it('keeps a bounded number of ABIs: past it, those fetched longest ago are dropped and fetched again when asked', async () => {
    const small = createAbiLookup({ store, chains: createChainCatalog(config), config, timeoutMs: 300, maxCachedAbis: 3 });
    const addresses = [1, 2, 3, 4, 5].map((n) => `0x${String(n).padStart(40, '0')}`);
    for (const address of addresses) {
      expect((await small.lookup(84532, address)).cached).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 5)); // distinct fetch times
    }
    expect(await store.selectFrom('abi_cache').select('address').execute()).toHaveLength(3);
    expect((await small.lookup(84532, addresses[4]!)).cached).toBe(true);
    const before = explorer.requests.length;
    expect((await small.lookup(84532, addresses[0]!)).cached).toBe(false);
    expect(explorer.requests.length).toBe(before + 1);
  });

  it('answers 502 for a rejected API key without revealing the key', async () => {
    const error = await expectServiceError(lookup.lookup(137, VERIFIED), 502, 'explorer_unavailable');
    expect(JSON.stringify(error.toBody())).not.toContain(API_KEY);
    expect(error.message).not.toContain(API_KEY);
  });

  it('answers 502 when the explorer cannot be reached', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const config = loadConfig({ FLOWGATE_DATA_DIR: dataDir, FLOWGATE_EXPLORER_API_KEY: API_KEY, FLOWGATE_EXPLORER_API_URL_1: `http://127.0.0.1:${port}/api` });
    const offline = createAbiLookup({ store, chains: createChainCatalog(config), config });
    const error = await expectServiceError(offline.lookup(1, VERIFIED), 502, 'explorer_unavailable');
    expect(error.message).not.toContain(API_KEY);
  });
});
