/**
 * The static chain list (SPEC.md "Chains"). Names, symbols and explorers follow
 * viem's chain definitions; default RPC URLs are viem's where it has the chain,
 * written out rather than imported: 'viem/chains' loads ~700 chain modules at
 * start (README "Start and memory"). test/chain-catalog.test.ts fails when a
 * viem upgrade moves one. Everything here is data: the catalog (catalog.ts)
 * turns it into the public and internal views.
 */

export type ChainType = 'evm' | 'solana';
export type ChainStatus = 'stable' | 'experimental';
export type ExplorerApiType = 'etherscan' | 'blockscout';

export interface ExplorerApi {
  url: string;
  type: ExplorerApiType;
}

export interface ChainSpec {
  /** Internal identifier (not the chain id); also accepted as an alias. */
  id: string;
  chainId: number;
  name: string;
  symbol: string;
  chainType: ChainType;
  status: ChainStatus;
  isTestnet: boolean;
  /** `devnet`: enabled only when the embedded devnet runs or an RPC URL is configured for it. */
  enabled: boolean | 'devnet';
  explorerUrl: string | null;
  explorerApi: ExplorerApi | null;
  /** Lowercase name aliases, besides `id` and the numeric id. */
  aliases: readonly string[];
  defaultRpcUrl: string;
  /** false where the explorer cannot serve ABIs (callers must pass `abi`). Default true. */
  abiAutoFetch?: boolean;
}

/** Etherscan's v2 API serves every Etherscan-family chain from one host, selected by `chainid`. */
export const ETHERSCAN_V2_API_URL = 'https://api.etherscan.io/v2/api';

const etherscanV2: ExplorerApi = { url: ETHERSCAN_V2_API_URL, type: 'etherscan' };
const blockscout = (host: string): ExplorerApi => ({ url: `https://${host}/api`, type: 'blockscout' });

/** Every link to an address is explorerUrl + this + address, on every chain we list. */
export const EXPLORER_ADDRESS_PATH = '/address/';

export const CHAIN_SPECS: readonly ChainSpec[] = [
  // Stable mainnets
  {
    id: 'ethereum',
    chainId: 1,
    name: 'Ethereum',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://etherscan.io',
    explorerApi: etherscanV2,
    aliases: ['mainnet', 'ethereum', 'eth-mainnet', 'ethereum-mainnet', 'eth'],
    defaultRpcUrl: 'https://ethereum.reth.rs/rpc',
  },
  {
    id: 'base',
    chainId: 8453,
    name: 'Base',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://basescan.org',
    explorerApi: etherscanV2,
    aliases: ['base', 'base-mainnet'],
    defaultRpcUrl: 'https://mainnet.base.org',
  },
  {
    id: 'arbitrum',
    chainId: 42161,
    name: 'Arbitrum One',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://arbiscan.io',
    explorerApi: etherscanV2,
    aliases: ['arbitrum', 'arbitrum-one', 'arbitrum-mainnet', 'arb'],
    defaultRpcUrl: 'https://arb1.arbitrum.io/rpc',
  },
  {
    id: 'optimism',
    chainId: 10,
    name: 'OP Mainnet',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://optimistic.etherscan.io',
    explorerApi: etherscanV2,
    aliases: ['optimism', 'optimism-mainnet', 'op', 'op-mainnet'],
    defaultRpcUrl: 'https://mainnet.optimism.io',
  },
  {
    id: 'polygon',
    chainId: 137,
    name: 'Polygon',
    symbol: 'POL',
    chainType: 'evm',
    status: 'stable',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://polygonscan.com',
    explorerApi: etherscanV2,
    aliases: ['polygon', 'polygon-mainnet', 'polygon-pos', 'matic'],
    defaultRpcUrl: 'https://polygon.drpc.org',
  },

  // Stable testnets
  {
    id: 'sepolia',
    chainId: 11155111,
    name: 'Sepolia',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://sepolia.etherscan.io',
    explorerApi: etherscanV2,
    aliases: ['sepolia', 'eth-sepolia', 'sepolia-testnet', 'ethereum-sepolia'],
    defaultRpcUrl: 'https://11155111.rpc.thirdweb.com',
  },
  {
    id: 'base-sepolia',
    chainId: 84532,
    name: 'Base Sepolia',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://sepolia.basescan.org',
    explorerApi: etherscanV2,
    aliases: ['base-sepolia', 'base-testnet'],
    defaultRpcUrl: 'https://sepolia.base.org',
  },

  // Experimental
  {
    id: '0g',
    chainId: 16661,
    name: '0G Mainnet',
    symbol: '0G',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://chainscan.0g.ai',
    explorerApi: null,
    aliases: ['0g', '0g-mainnet', 'zerog', 'zerog-mainnet'],
    defaultRpcUrl: 'https://evmrpc.0g.ai',
  },
  {
    id: '0g-galileo',
    chainId: 16602,
    name: '0G Galileo Testnet',
    symbol: '0G',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://chainscan-galileo.0g.ai',
    explorerApi: null,
    aliases: ['0g-galileo', '0g-testnet', 'zerog-testnet', 'zerog-galileo', 'galileo'],
    defaultRpcUrl: 'https://evmrpc-testnet.0g.ai',
  },
  {
    // SPEC: "On chain 5042 contract ABIs cannot be fetched automatically".
    id: 'arc',
    chainId: 5042,
    name: 'Arc',
    symbol: 'USDC',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://explorer.arc.io',
    explorerApi: null,
    aliases: ['arc', 'arc-mainnet'],
    defaultRpcUrl: 'https://rpc.mainnet.arc.io',
    abiAutoFetch: false,
  },
  {
    id: 'arc-testnet',
    chainId: 5042002,
    name: 'Arc Testnet',
    symbol: 'USDC',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://testnet.arcscan.app',
    explorerApi: blockscout('testnet.arcscan.app'),
    aliases: ['arc-testnet'],
    defaultRpcUrl: 'https://rpc.testnet.arc.network',
  },
  {
    id: 'hyperevm',
    chainId: 999,
    name: 'HyperEVM',
    symbol: 'HYPE',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://hyperevmscan.io',
    explorerApi: etherscanV2,
    aliases: ['hyperevm', 'hyperevm-mainnet', 'hyperliquid', 'hyperliquid-evm'],
    defaultRpcUrl: 'https://rpc.hyperliquid.xyz/evm',
  },
  {
    id: 'unichain',
    chainId: 130,
    name: 'Unichain',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://uniscan.xyz',
    explorerApi: etherscanV2,
    aliases: ['unichain', 'unichain-mainnet'],
    defaultRpcUrl: 'https://mainnet.unichain.org/',
  },
  {
    id: 'unichain-sepolia',
    chainId: 1301,
    name: 'Unichain Sepolia',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://sepolia.uniscan.xyz',
    explorerApi: etherscanV2,
    aliases: ['unichain-sepolia', 'unichain-testnet'],
    defaultRpcUrl: 'https://sepolia.unichain.org',
  },
  {
    id: 'somnia',
    chainId: 5031,
    name: 'Somnia',
    symbol: 'SOMI',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://explorer.somnia.network',
    explorerApi: blockscout('explorer.somnia.network'),
    aliases: ['somnia', 'somnia-mainnet'],
    defaultRpcUrl: 'https://api.infra.mainnet.somnia.network',
  },
  {
    id: 'somnia-testnet',
    chainId: 50312,
    name: 'Somnia Testnet',
    symbol: 'STT',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://shannon-explorer.somnia.network',
    explorerApi: blockscout('shannon-explorer.somnia.network'),
    aliases: ['somnia-testnet', 'somnia-shannon', 'shannon'],
    defaultRpcUrl: 'https://api.infra.testnet.somnia.network',
  },

  // Solana (network ids 101 and 103 by convention; not EIP-155)
  {
    id: 'solana',
    chainId: 101,
    name: 'Solana',
    symbol: 'SOL',
    chainType: 'solana',
    status: 'stable',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://explorer.solana.com',
    explorerApi: null,
    aliases: ['solana', 'solana-mainnet', 'solana-mainnet-beta', 'sol'],
    defaultRpcUrl: 'https://api.mainnet-beta.solana.com',
    abiAutoFetch: false,
  },
  {
    id: 'solana-devnet',
    chainId: 103,
    name: 'Solana Devnet',
    symbol: 'SOL',
    chainType: 'solana',
    status: 'stable',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://explorer.solana.com',
    explorerApi: null,
    aliases: ['solana-devnet', 'solana-testnet'],
    defaultRpcUrl: 'https://api.devnet.solana.com',
    abiAutoFetch: false,
  },

  // Tempo (not in SPEC's status list; new, so experimental)
  {
    id: 'tempo',
    chainId: 4217,
    name: 'Tempo Mainnet',
    symbol: 'USD',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: false,
    enabled: true,
    explorerUrl: 'https://explore.tempo.xyz',
    explorerApi: null,
    aliases: ['tempo', 'tempo-mainnet'],
    defaultRpcUrl: 'https://rpc.tempo.xyz',
  },
  {
    id: 'tempo-moderato',
    chainId: 42431,
    name: 'Tempo Testnet (Moderato)',
    symbol: 'USD',
    chainType: 'evm',
    status: 'experimental',
    isTestnet: true,
    enabled: true,
    explorerUrl: 'https://explore.testnet.tempo.xyz',
    explorerApi: null,
    aliases: ['tempo-testnet', 'tempo-moderato', 'moderato'],
    defaultRpcUrl: 'https://rpc.moderato.tempo.xyz',
  },

  // Listed but not available for execution (shown only with includeDisabled)
  {
    id: 'polygon-amoy',
    chainId: 80002,
    name: 'Polygon Amoy',
    symbol: 'POL',
    chainType: 'evm',
    status: 'stable',
    isTestnet: true,
    enabled: false,
    explorerUrl: 'https://amoy.polygonscan.com',
    explorerApi: etherscanV2,
    aliases: ['polygon-amoy', 'amoy', 'polygon-testnet'],
    defaultRpcUrl: 'https://polygon-amoy.drpc.org',
  },
  {
    id: 'arbitrum-sepolia',
    chainId: 421614,
    name: 'Arbitrum Sepolia',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: true,
    enabled: false,
    explorerUrl: 'https://sepolia.arbiscan.io',
    explorerApi: etherscanV2,
    aliases: ['arbitrum-sepolia', 'arbitrum-testnet'],
    defaultRpcUrl: 'https://sepolia-rollup.arbitrum.io/rpc',
  },

  // The embedded local devnet (DESIGN "Chains and the embedded default").
  {
    id: 'flowgate-devnet',
    chainId: 31337,
    name: 'Flowgate Devnet',
    symbol: 'ETH',
    chainType: 'evm',
    status: 'stable',
    isTestnet: true,
    enabled: 'devnet',
    explorerUrl: null,
    explorerApi: null,
    aliases: ['devnet', 'flowgate-devnet', 'anvil', 'localhost', 'local'],
    defaultRpcUrl: 'http://127.0.0.1:8545',
    abiAutoFetch: false,
  },
];
