import {
  anvil,
  arbitrum,
  arbitrumSepolia,
  arc,
  arcTestnet,
  base,
  baseSepolia,
  hyperEvm,
  mainnet,
  optimism,
  polygon,
  polygonAmoy,
  sepolia,
  somnia,
  somniaTestnet,
  tempo,
  tempoModerato,
  unichain,
  unichainSepolia,
  zeroGMainnet,
  zeroGTestnet,
  type Chain,
} from 'viem/chains';

/**
 * The static chain list (SPEC.md "Chains"). Names, symbols and explorers follow
 * viem's chain definitions; default RPC URLs are taken from viem where it has
 * the chain, so they move with viem upgrades. Everything here is data: the
 * catalog (catalog.ts) turns it into the public and internal views.
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
const rpcOf = (chain: Chain): string => chain.rpcUrls.default.http[0]!;

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
    defaultRpcUrl: rpcOf(mainnet),
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
    defaultRpcUrl: rpcOf(base),
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
    defaultRpcUrl: rpcOf(arbitrum),
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
    defaultRpcUrl: rpcOf(optimism),
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
    defaultRpcUrl: rpcOf(polygon),
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
    defaultRpcUrl: rpcOf(sepolia),
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
    defaultRpcUrl: rpcOf(baseSepolia),
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
    defaultRpcUrl: rpcOf(zeroGMainnet),
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
    defaultRpcUrl: rpcOf(zeroGTestnet),
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
    defaultRpcUrl: rpcOf(arc),
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
    defaultRpcUrl: rpcOf(arcTestnet),
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
    defaultRpcUrl: rpcOf(hyperEvm),
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
    defaultRpcUrl: rpcOf(unichain),
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
    defaultRpcUrl: rpcOf(unichainSepolia),
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
    defaultRpcUrl: rpcOf(somnia),
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
    defaultRpcUrl: rpcOf(somniaTestnet),
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
    defaultRpcUrl: rpcOf(tempo),
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
    defaultRpcUrl: rpcOf(tempoModerato),
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
    defaultRpcUrl: rpcOf(polygonAmoy),
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
    defaultRpcUrl: rpcOf(arbitrumSepolia),
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
    defaultRpcUrl: rpcOf(anvil),
    abiAutoFetch: false,
  },
];
