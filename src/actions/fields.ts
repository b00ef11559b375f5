/**
 * Field type hints shared by several actions, so one field reads the same
 * wherever it appears.
 */

export const T = '{{@nodeId:Label.field}}';

export const hint = {
  network: 'string (chain ID, e.g. "8453"; see chains)',
  address: `string (0x address; supports ${T} templates)`,
  tokenConfig: 'string (JSON object, e.g. {"mode":"custom","customToken":{"address":"0x...","symbol":"USDC"}})',
  humanAmount: `string (decimal amount in token units, e.g. "1.5"; supports ${T} templates)`,
  abi: 'string (JSON-encoded ABI array, not a raw array)',
  abiFunction: 'string (function name, e.g. "transfer"; the names function, method and functionName are not accepted)',
  functionArgs: `string (JSON array of arguments in ABI order, e.g. "[\\"0x...\\", \\"1000\\"]"; supports ${T} templates)`,
  gasLimitMultiplier: 'string (e.g. "1.5"; default 2x, 1.5x on chain 999)',
  web3Connection: 'string (default | eoa | safe:<safeWalletId>; default follows the organization policy)',
  usePrivateMempool:
    'boolean (private-mempool routing is not available on this gateway: with strict (default) the write is refused; with strict false it goes to the public mempool)',
  strict: 'boolean (default true: with usePrivateMempool, refuse the write rather than fall back to the public mempool)',
  integrationId: (kind: string) => `string (id of a ${kind} integration, from list_integrations)`,
  templated: (what: string) => `string (${what}; supports ${T} templates)`,
} as const;

/** Optional routing fields accepted by every write action. */
export const writeRouting = {
  gasLimitMultiplier: hint.gasLimitMultiplier,
  web3Connection: hint.web3Connection,
  usePrivateMempool: hint.usePrivateMempool,
  strict: hint.strict,
} as const;

/** Output of every on-chain write step (SPEC Execution log entry). */
export const writeOutputs = {
  success: 'boolean',
  transactionHash: 'string (0x transaction hash)',
  gasUsed: 'string (total gas cost in wei = units x price)',
  gasUsedUnits: 'string (gas units consumed)',
  effectiveGasPrice: 'string (wei per gas unit)',
  transactionLink: 'string (explorer URL, or empty when the chain has no explorer)',
} as const;
