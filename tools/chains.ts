import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { unknownChainMessage, type PublicChain } from '../src/chains/catalog.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { booleanish, chainRef } from './inputs.ts';

/** SPEC.md "Chain". RPC endpoint URLs are never part of it. */
export const publicChainSchema = z.object({
  id: z.string().describe('Internal identifier (not the chain id), also accepted as a chain name'),
  chainId: z.number().int().describe('EVM chain id or Solana network id (101 mainnet, 103 devnet)'),
  name: z.string(),
  symbol: z.string().describe('Native token symbol'),
  chainType: z.enum(['evm', 'solana']),
  explorerUrl: z.string().nullable(),
  explorerAddressPath: z.string().nullable().describe('Appended to explorerUrl, followed by the address, for address links'),
  explorerApiUrl: z.string().nullable(),
  explorerApiType: z.enum(['etherscan', 'blockscout']).nullable(),
  isTestnet: z.boolean(),
  isEnabled: z.boolean().describe('Available for execution'),
  usePrivateMempoolRpc: z
    .boolean()
    .describe('Whether writes on this chain can go through a private-mempool RPC; false on every chain: this gateway has no private-mempool routing'),
});

const listChains = defineTool({
  name: 'list_chains',
  title: 'List supported chains',
  description: [
    'Chains to execute on. Stable: 1, 8453, 42161, 10, 137, testnets 11155111, 84532; Solana 101/103; 31337 is the local devnet.',
    'Others are experimental (broadcasts may hang): no production writes unless the user opts in. Execution tools take chainId or a name ("base").',
  ].join(' '),
  input: z.object({
    includeDisabled: booleanish.optional().describe('Also list chains that are not available for execution (default false)'),
  }),
  output: z.array(publicChainSchema),
  scope: 'public',
  rest: { method: 'GET', path: '/api/chains', cacheControl: 'public, max-age=300' },
  mcp: { annotations: READ_ONLY_LOCAL, resultKey: 'chains' },
  handler(input, ctx) {
    // Returned as is, frozen (the catalog's list): invokeTool then checks it once and the edges serialize it once.
    return ctx.services.chains.list({ includeDisabled: input.includeDisabled ?? false }) as PublicChain[];
  },
});

const getContractAbi = defineTool({
  name: 'get_contract_abi',
  title: 'Get a contract ABI',
  description: [
    "A verified contract's ABI from the chain's block explorer, to find function names and argument types before a contract call.",
    'Unverified contracts, Solana programs and chains without ABI lookup fail: then pass `abi` yourself.',
  ].join(' '),
  input: z.object({
    chainId: chainRef.describe('Chain id (for example 8453) or chain name (for example "base")'),
    address: z.string().describe('Contract address (0x-prefixed, 20 bytes)'),
  }),
  output: z.object({
    success: z.literal(true),
    abi: z.array(z.unknown()),
    explorerUrl: z.string().nullable().describe("The contract's page on the block explorer"),
  }),
  scope: 'mcp:read',
  rest: {
    method: 'GET',
    path: '/api/chains/:chainId/abi',
    errors: ['explorer_unavailable', 'chain_not_found', 'abi_unavailable', 'invalid_address', 'abi_not_verified'],
  },
  mcp: { annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true } },
  async handler(input, ctx) {
    const { chains, abiLookup } = ctx.services;
    const chain = chains.resolve(input.chainId);
    if (!chain) throw new ServiceError(404, 'chain_not_found', unknownChainMessage(chains, input.chainId), { chain: input.chainId });
    const { abi, explorerUrl } = await abiLookup.lookup(chain.chainId, input.address, ctx.principal?.organizationId);
    return { success: true as const, abi, explorerUrl };
  },
});

export const chainTools = [listChains, getContractAbi];
