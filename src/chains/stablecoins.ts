import { getAddress, isAddress, type Address } from 'viem';

/**
 * Recognised USD stablecoins per chain, for SPEC.md's per-transaction
 * stablecoin limit (1:1 peg applied to the token's decimals). Lookup is by
 * (chainId, token address), case-insensitive. The devnet's test USDC is added
 * with `register` once the devnet knows its address.
 */

export interface Stablecoin {
  /** EIP-55 checksummed. */
  address: Address;
  symbol: string;
  decimals: number;
}

export interface StablecoinRegistry {
  lookup(chainId: number, address: string): Stablecoin | undefined;
  list(chainId: number): Stablecoin[];
  register(chainId: number, token: { address: string; symbol: string; decimals: number }): Stablecoin;
}

type Row = readonly [symbol: string, decimals: number, address: string];

/** Canonical (issuer-native and main bridged) deployments on the catalog's main chains and testnets. */
export const KNOWN_STABLECOINS: Readonly<Record<number, readonly Row[]>> = {
  // Ethereum
  1: [
    ['USDC', 6, '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'],
    ['USDT', 6, '0xdAC17F958D2ee523a2206206994597C13D831ec7'],
    ['DAI', 18, '0x6B175474E89094C44Da98b954EedeAC495271d0F'],
    ['PYUSD', 6, '0x6c3ea9036406852006290770BEdFcAbA0e23A0e8'],
  ],
  // Base
  8453: [
    ['USDC', 6, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'],
    ['USDbC', 6, '0xd9aAEc86B65D86f6A7B5B1b0c42FFA531710b6CA'],
    ['DAI', 18, '0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb'],
  ],
  // Arbitrum One
  42161: [
    ['USDC', 6, '0xaf88d065e77c8cC2239327C5EDb3A432268e5831'],
    ['USDC.e', 6, '0xFF970A61A04b1cA14834A43f5dE4533eBDDB5CC8'],
    ['USDT', 6, '0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9'],
    ['DAI', 18, '0xDA10009cBd5D07dd0CeCc66161FC93D7c9000da1'],
  ],
  // OP Mainnet
  10: [
    ['USDC', 6, '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85'],
    ['USDC.e', 6, '0x7F5c764cBc14f9669B88837ca1490cCa17c31607'],
    ['USDT', 6, '0x94b008aA00579c1307B0EF2c499aD98a8ce58e58'],
    ['DAI', 18, '0xDA10009cBd5D07dd0CeCc66161FC93D7c9000da1'],
  ],
  // Polygon PoS
  137: [
    ['USDC', 6, '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'],
    ['USDC.e', 6, '0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174'],
    ['USDT', 6, '0xc2132D05D31c914a87C6611C10748AEb04B58e8F'],
    ['DAI', 18, '0x8f3Cf7ad23Cd3CaDbD9735AFf958023239c6A063'],
  ],
  // Sepolia (Circle testnet USDC)
  11155111: [['USDC', 6, '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238']],
  // Base Sepolia (Circle testnet USDC)
  84532: [['USDC', 6, '0x036CbD53842c5426634e7929541eC2318f3dCF7e']],
};

export function createStablecoinRegistry(): StablecoinRegistry {
  // chainId → lowercase address → token
  const byChain = new Map<number, Map<string, Stablecoin>>();

  const register: StablecoinRegistry['register'] = (chainId, token) => {
    if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new Error(`Invalid chain id for a stablecoin: ${chainId}`);
    // isAddress rejects a mixed-case address with a bad checksum, so a typo in the table fails at start-up.
    if (!isAddress(token.address)) throw new Error(`Invalid stablecoin address: ${token.address}`);
    if (!Number.isInteger(token.decimals) || token.decimals < 0 || token.decimals > 36) throw new Error(`Invalid stablecoin decimals: ${token.decimals}`);
    const entry: Stablecoin = Object.freeze({ address: getAddress(token.address), symbol: token.symbol, decimals: token.decimals });
    let tokens = byChain.get(chainId);
    if (!tokens) byChain.set(chainId, (tokens = new Map()));
    tokens.set(entry.address.toLowerCase(), entry);
    return entry;
  };

  for (const [chainId, rows] of Object.entries(KNOWN_STABLECOINS)) {
    for (const [symbol, decimals, address] of rows) register(Number(chainId), { symbol, decimals, address });
  }

  return {
    lookup(chainId, address) {
      if (typeof address !== 'string') return undefined;
      return byChain.get(chainId)?.get(address.trim().toLowerCase());
    },
    list: (chainId) => [...(byChain.get(chainId)?.values() ?? [])],
    register,
  };
}
