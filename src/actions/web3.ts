import { hint, writeOutputs, writeRouting } from './fields.ts';
import type { PluginActionSpec } from './types.ts';

/**
 * Generic EVM actions. Reads need no credentials; writes sign with the
 * organization wallet (or its Safe), so they report `requiresCredentials`.
 */

const web3 = (spec: Omit<PluginActionSpec, 'category' | 'integration'>): PluginActionSpec => ({
  ...spec,
  category: 'Web3',
  integration: 'web3',
});

export const web3Actions: readonly PluginActionSpec[] = [
  web3({
    actionType: 'web3/check-balance',
    label: 'Check Balance',
    description: "Reads an address's native-token balance (ETH, POL, ...) on one chain.",
    requiredFields: { network: hint.network, address: hint.address },
    optionalFields: {},
    outputFields: {
      balance: 'string (decimal, native token units)',
      balanceWei: 'string (integer, wei)',
      address: 'string (0x address)',
    },
    requiresCredentials: false,
    featureId: 'web3-wallet',
    exampleConfig: { actionType: 'web3/check-balance', network: '8453', address: '0x0000000000000000000000000000000000000000' },
  }),
  web3({
    actionType: 'web3/check-token-balance',
    label: 'Check Token Balance',
    description: "Reads an address's ERC-20 balance for the token named in tokenConfig.",
    requiredFields: { network: hint.network, address: hint.address, tokenConfig: hint.tokenConfig },
    optionalFields: {},
    outputFields: {
      balance: 'string (decimal, token units)',
      balanceRaw: 'string (integer, smallest token units)',
      symbol: 'string',
      decimals: 'number',
      address: 'string (0x address)',
    },
    requiresCredentials: false,
    featureId: 'web3-wallet',
  }),
  web3({
    actionType: 'web3/transfer-funds',
    label: 'Transfer Funds',
    description: 'Sends native token from the organization wallet. Counts against the daily native-value cap; gas does not.',
    requiredFields: {
      network: hint.network,
      amount: 'string (decimal amount in native units, e.g. "0.01"; not wei)',
      recipientAddress: hint.address,
    },
    optionalFields: { ...writeRouting },
    outputFields: writeOutputs,
    requiresCredentials: true,
    featureId: 'web3-wallet',
  }),
  web3({
    actionType: 'web3/transfer-token',
    label: 'Transfer Token',
    description: 'Sends an ERC-20 token from the organization wallet. Stablecoin transfers above 100 USD per transaction are refused.',
    requiredFields: {
      network: hint.network,
      tokenConfig: hint.tokenConfig,
      amount: hint.humanAmount,
      recipientAddress: hint.address,
    },
    optionalFields: { ...writeRouting },
    outputFields: writeOutputs,
    requiresCredentials: true,
    featureId: 'web3-wallet',
  }),
  web3({
    actionType: 'web3/read-contract',
    label: 'Read Contract',
    description: 'Calls a view or pure function and returns the decoded result; sends no transaction.',
    requiredFields: {
      network: hint.network,
      contractAddress: hint.address,
      abi: hint.abi,
      abiFunction: hint.abiFunction,
    },
    optionalFields: { functionArgs: hint.functionArgs },
    outputFields: {
      result: 'any (decoded return value; several outputs come back as an object keyed by output name, or an array when unnamed)',
    },
    requiresCredentials: false,
    featureId: 'web3-contracts',
  }),
  web3({
    actionType: 'web3/write-contract',
    label: 'Write Contract',
    description: 'Sends a state-changing contract call from the organization wallet (or a Safe via web3Connection) and waits for the receipt.',
    requiredFields: {
      network: hint.network,
      contractAddress: hint.address,
      abi: hint.abi,
      abiFunction: hint.abiFunction,
    },
    optionalFields: {
      functionArgs: hint.functionArgs,
      ethValue: 'string (native value sent with the call, decimal native units, e.g. "0.01")',
      ...writeRouting,
    },
    outputFields: writeOutputs,
    requiresCredentials: true,
    featureId: 'web3-contracts',
    exampleConfig: {
      actionType: 'web3/write-contract',
      network: '8453',
      web3Connection: 'default',
      contractAddress: '0x0000000000000000000000000000000000000000',
      abi: '[{"type":"function","name":"transfer","stateMutability":"nonpayable","inputs":[{"name":"to","type":"address"},{"name":"amount","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]}]',
      abiFunction: 'transfer',
      functionArgs: '["0x0000000000000000000000000000000000000001", "1000000"]',
    },
  }),
  web3({
    actionType: 'web3/get-transaction',
    label: 'Get Transaction',
    description: 'Fetches a transaction and its receipt by hash.',
    requiredFields: {
      network: hint.network,
      transactionHash: hint.templated('0x transaction hash'),
    },
    optionalFields: {},
    outputFields: {
      hash: 'string',
      from: 'string (0x address)',
      to: 'string | null (0x address; null for contract creation)',
      value: 'string (wei)',
      input: 'string (calldata)',
      blockNumber: 'number | null (null while pending)',
      status: 'string (success | reverted | pending)',
      gasUsed: 'string (gas units, from the receipt)',
    },
    requiresCredentials: false,
    featureId: 'web3-wallet',
  }),
  web3({
    actionType: 'web3/decode-calldata',
    label: 'Decode Calldata',
    description: 'Decodes transaction input data into a function name and arguments, using the given ABI or the ABI fetched for contractAddress.',
    requiredFields: { calldata: hint.templated('0x-prefixed calldata') },
    optionalFields: {
      abi: hint.abi,
      contractAddress: 'string (0x address; its verified ABI is fetched when abi is omitted)',
      network: hint.network,
    },
    outputFields: {
      functionName: 'string',
      functionSignature: 'string (e.g. "transfer(address,uint256)")',
      args: 'object (decoded arguments keyed by ABI parameter name)',
    },
    requiresCredentials: false,
    featureId: 'web3-contracts',
  }),
  web3({
    actionType: 'web3/query-events',
    label: 'Query Events',
    description:
      'Lists past event logs of one contract event, decoded. Bound the range with fromBlock/toBlock or blockCount (most recent blocks); read in pages the RPC accepts, up to 100,000 blocks and 1,000 events.',
    requiredFields: {
      network: hint.network,
      contractAddress: hint.address,
      abi: hint.abi,
      eventName: 'string (event name from the ABI, e.g. "Transfer")',
    },
    optionalFields: {
      fromBlock: 'string (block number)',
      toBlock: 'string (block number or "latest")',
      blockCount: 'number (look back this many blocks from the latest)',
      eventArgs: 'string (JSON object filtering indexed parameters, e.g. {"from":"0x..."}; an array value matches any item)',
    },
    outputFields: {
      events: 'array (of {eventName, args, blockNumber, transactionHash, logIndex, address})',
      count: 'number',
      truncated: 'boolean (present when the 1,000-event cap stopped the read; continue from nextFromBlock)',
    },
    requiresCredentials: false,
    featureId: 'web3-event-queries',
  }),
  web3({
    actionType: 'web3/approve-token',
    label: 'Approve Token',
    description: 'Approves a spender (for example a protocol contract) to move an ERC-20 token from the organization wallet.',
    requiredFields: {
      network: hint.network,
      tokenConfig: hint.tokenConfig,
      spenderAddress: hint.address,
      amount: hint.humanAmount,
    },
    optionalFields: { ...writeRouting },
    outputFields: writeOutputs,
    requiresCredentials: true,
    featureId: 'web3-token-approvals',
  }),
  web3({
    actionType: 'web3/check-allowance',
    label: 'Check Allowance',
    description: 'Reads how much of an ERC-20 token a spender may move on behalf of an owner.',
    requiredFields: {
      network: hint.network,
      tokenConfig: hint.tokenConfig,
      ownerAddress: hint.address,
      spenderAddress: hint.address,
    },
    optionalFields: {},
    outputFields: {
      allowance: 'string (decimal, token units)',
      allowanceRaw: 'string (integer, smallest token units)',
      symbol: 'string',
      decimals: 'number',
    },
    requiresCredentials: false,
    featureId: 'web3-token-approvals',
  }),
];
