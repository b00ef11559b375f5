/** The embedded devnet's chain id (anvil's default). A leaf module: the CLI reads it before viem is loaded. */
export const DEVNET_CHAIN_ID = 31337 as const;
