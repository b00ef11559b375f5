import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createChainCatalog, resolveChainOrThrow, type ChainCatalog } from '../src/chains/catalog.ts';
import { ServiceError } from '../src/errors.ts';
import { CHAIN_SPECS } from '../src/chains/chain-data.ts';
import * as viemChains from 'viem/chains';

const catalogWith = (env: Record<string, string> = {}): ChainCatalog =>
  createChainCatalog(loadConfig({ FLOWGATE_DATA_DIR: '/tmp/flowgate-catalog-test', ...env }));

const catalog = catalogWith();

/** SPEC.md "Chains": every alias it names, plus the Tempo families. */
const SPEC_ALIASES: Record<string, number> = {
  mainnet: 1,
  ethereum: 1,
  'eth-mainnet': 1,
  'ethereum-mainnet': 1,
  sepolia: 11155111,
  'eth-sepolia': 11155111,
  'sepolia-testnet': 11155111,
  base: 8453,
  'base-mainnet': 8453,
  'base-sepolia': 84532,
  'base-testnet': 84532,
  solana: 101,
  'solana-mainnet': 101,
  'solana-devnet': 103,
  'solana-testnet': 103,
  tempo: 4217,
  'tempo-mainnet': 4217,
  'tempo-testnet': 42431,
  'tempo-moderato': 42431,
  moderato: 42431,
};

const STABLE = [1, 8453, 42161, 10, 137, 11155111, 84532];
const EXPERIMENTAL = [16661, 16602, 5042, 5042002, 999, 130, 1301, 5031, 50312];
const ALL_LISTED = [...STABLE, ...EXPERIMENTAL, 101, 103, 4217, 42431, 31337];

describe('chain aliases', () => {
  it.each(Object.entries(SPEC_ALIASES))('%s resolves to %i', (alias, chainId) => {
    expect(catalog.resolve(alias)?.chainId).toBe(chainId);
    expect(catalog.resolve(alias.toUpperCase())?.chainId).toBe(chainId);
    expect(catalog.resolve(` ${alias[0]!.toUpperCase()}${alias.slice(1)} `)?.chainId).toBe(chainId);
  });

  it('resolves other common names', () => {
    expect(catalog.resolve('arbitrum')?.chainId).toBe(42161);
    expect(catalog.resolve('optimism')?.chainId).toBe(10);
    expect(catalog.resolve('polygon')?.chainId).toBe(137);
    expect(catalog.resolve('hyperevm')?.chainId).toBe(999);
    expect(catalog.resolve('unichain')?.chainId).toBe(130);
    for (const name of ['devnet', 'flowgate-devnet', 'anvil', 'localhost']) expect(catalog.resolve(name)?.chainId).toBe(31337);
  });

  it('accepts every listed numeric id as a number or a decimal string', () => {
    for (const chainId of [...ALL_LISTED, 80002, 421614]) {
      expect(catalog.resolve(chainId)?.chainId).toBe(chainId);
      expect(catalog.resolve(String(chainId))?.chainId).toBe(chainId);
    }
  });

  it('resolves internal ids too', () => {
    for (const chain of catalog.list({ includeDisabled: true })) expect(catalog.resolve(chain.id)?.chainId).toBe(chain.chainId);
  });

  it('refuses unknown names and ids', () => {
    for (const ref of ['basee', 'goerli', '', '56', 56, 1.5, -1, '0x2105', '8453abc']) expect(catalog.resolve(ref)).toBeUndefined();
  });

  it('resolveChainOrThrow throws 400 unsupported_chain with a suggestion', () => {
    expect(resolveChainOrThrow(catalog, 'Base').chainId).toBe(8453);
    let caught: unknown;
    try {
      resolveChainOrThrow(catalog, 'basee');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ServiceError);
    const error = caught as ServiceError;
    expect(error.status).toBe(400);
    expect(error.code).toBe('unsupported_chain');
    expect(error.message).toMatch(/did you mean "base" \(8453\)/i);
    expect(error.message).toContain('ethereum (1)');
    expect(error.details).toMatchObject({ chain: 'basee', suggestedChainId: 8453 });
  });
});

describe('chain list', () => {
  it('lists every SPEC chain, enabled, by default', () => {
    const ids = catalog.list().map((c) => c.chainId);
    for (const chainId of ALL_LISTED) expect(ids).toContain(chainId);
    expect(catalog.list().every((c) => c.isEnabled)).toBe(true);
  });

  it('hides disabled chains unless includeDisabled', () => {
    const ids = catalog.list().map((c) => c.chainId);
    expect(ids).not.toContain(80002);
    expect(ids).not.toContain(421614);
    const all = catalog.list({ includeDisabled: true });
    expect(all.find((c) => c.chainId === 80002)).toMatchObject({ name: 'Polygon Amoy', isEnabled: false });
    expect(all.find((c) => c.chainId === 421614)).toMatchObject({ name: 'Arbitrum Sepolia', isEnabled: false });
  });

  it('returns exactly the SPEC Chain fields, never an RPC URL', () => {
    const fields = [
      'id',
      'chainId',
      'name',
      'symbol',
      'chainType',
      'explorerUrl',
      'explorerAddressPath',
      'explorerApiUrl',
      'explorerApiType',
      'isTestnet',
      'isEnabled',
      'usePrivateMempoolRpc',
    ];
    const withRpc = catalogWith({ FLOWGATE_RPC_URL_8453: 'https://secret-rpc.example.com/key123' });
    const all = withRpc.list({ includeDisabled: true });
    for (const chain of all) expect(Object.keys(chain).sort()).toEqual([...fields].sort());
    const json = JSON.stringify(all);
    expect(json).not.toMatch(/rpcUrl|defaultRpc/i);
    expect(json).not.toContain('secret-rpc');
    for (const chain of all) expect(json).not.toContain(withRpc.get(chain.chainId)!.defaultRpcUrl);
  });

  it('includes Flowgate Devnet as 31337, switched by the devnet setting or an RPC URL', () => {
    expect(catalog.list().find((c) => c.chainId === 31337)).toMatchObject({
      name: 'Flowgate Devnet',
      symbol: 'ETH',
      isTestnet: true,
      isEnabled: true,
      explorerUrl: null,
    });

    const off = catalogWith({ FLOWGATE_DEVNET: 'off' });
    expect(off.list().map((c) => c.chainId)).not.toContain(31337);
    expect(off.list({ includeDisabled: true }).find((c) => c.chainId === 31337)).toMatchObject({ name: 'Flowgate Devnet', isEnabled: false });

    const external = catalogWith({ FLOWGATE_DEVNET: 'off', FLOWGATE_RPC_URL_31337: 'http://127.0.0.1:9545' });
    expect(external.get(31337)?.isEnabled).toBe(true);
    expect(external.rpcUrl(31337)).toBe('http://127.0.0.1:9545');
  });

  it('describes chain types and testnets, and claims no private mempool (no private routing exists)', () => {
    expect(catalog.get(101)).toMatchObject({ chainType: 'solana', isTestnet: false, symbol: 'SOL' });
    expect(catalog.get(103)).toMatchObject({ chainType: 'solana', isTestnet: true });
    expect(catalog.get(42431)).toMatchObject({ name: 'Tempo Testnet (Moderato)', isTestnet: true });
    const privateMempool = catalog
      .list({ includeDisabled: true })
      .filter((c) => c.usePrivateMempoolRpc)
      .map((c) => c.chainId);
    expect(privateMempool).toEqual([]);
    for (const chain of catalog.list({ includeDisabled: true })) expect(chain.id).not.toBe(String(chain.chainId));
  });

  it('uses the Etherscan v2 API for Etherscan-family chains', () => {
    expect(catalog.get(8453)).toMatchObject({
      explorerUrl: 'https://basescan.org',
      explorerAddressPath: '/address/',
      explorerApiUrl: 'https://api.etherscan.io/v2/api',
      explorerApiType: 'etherscan',
    });
    expect(catalog.get(50312)).toMatchObject({ explorerApiType: 'blockscout' });
    expect(catalog.get(5042)?.abiAutoFetch).toBe(false);
  });
});

describe('chain status and internal lookups', () => {
  it('classifies stable and experimental chains as SPEC lists them', () => {
    for (const chainId of STABLE) expect(catalog.status(chainId)).toBe('stable');
    for (const chainId of EXPERIMENTAL) expect(catalog.status(chainId)).toBe('experimental');
    expect(catalog.status(56)).toBeUndefined();
  });

  it('prefers configured RPC and explorer URLs over defaults', () => {
    const configured = catalogWith({ FLOWGATE_RPC_URL_8453: 'https://rpc.example.com', FLOWGATE_EXPLORER_API_URL_8453: 'http://127.0.0.1:1/api' });
    expect(configured.rpcUrl(8453)).toBe('https://rpc.example.com');
    expect(configured.rpcUrl(1)).toBe(catalog.get(1)!.defaultRpcUrl);
    expect(configured.rpcUrl(56)).toBeUndefined();
    expect(configured.explorerApi(8453)).toEqual({ url: 'http://127.0.0.1:1/api', type: 'etherscan' });
    expect(configured.explorerApi(1)).toEqual({ url: 'https://api.etherscan.io/v2/api', type: 'etherscan' });
    expect(configured.explorerApi(4217)).toBeUndefined();
    // The public view keeps the catalog's own explorer API, not the override.
    expect(configured.get(8453)?.explorerApiUrl).toBe('https://api.etherscan.io/v2/api');
  });
});

describe('default RPC URLs', () => {
  // chain-data.ts writes viem's URLs out (importing 'viem/chains' costs start time); a viem upgrade that moves one fails here.
  const viemChainsById = new Map<number, string[]>();
  for (const chain of Object.values(viemChains) as { id?: number; rpcUrls?: { default?: { http?: readonly string[] } } }[]) {
    const url = chain?.rpcUrls?.default?.http?.[0];
    if (typeof chain?.id === 'number' && url) viemChainsById.set(chain.id, [...(viemChainsById.get(chain.id) ?? []), url]);
  }
  it.each(CHAIN_SPECS.filter((spec) => spec.chainType === 'evm').map((spec) => [spec.id, spec] as const))(
    '%s uses a default RPC URL of viem for its chain id',
    (_id, spec) => {
      expect(viemChainsById.get(spec.chainId)).toContain(spec.defaultRpcUrl);
    },
  );
});
