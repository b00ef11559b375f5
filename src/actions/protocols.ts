import type { AbiFunction, Address } from 'viem';
import { hint, writeOutputs, writeRouting } from './fields.ts';
import type { FeatureId, FieldMap, PluginActionSpec, ProtocolArg, ProtocolBinding } from './types.ts';

/**
 * Protocol actions as data: contract address per chain, the ABI fragment of
 * the function, and how config fields map to its arguments. The action's
 * field lists are derived from that mapping, so they cannot disagree with it.
 */

interface ProtocolActionData {
  slug: string;
  label: string;
  description: string;
  functionName: string;
  kind: 'read' | 'write';
  abi: AbiFunction;
  args: readonly ProtocolArg[];
  keywords: readonly string[];
  exampleConfig?: Readonly<Record<string, unknown>>;
}

interface ProtocolData {
  protocol: string;
  protocolName: string;
  contract: string;
  addresses: Readonly<Record<number, Address>>;
  featureId: FeatureId;
  /** Type hint of each config field any action of the protocol reads. */
  fieldHints: FieldMap;
  /** Type hint of each named read output. */
  outputHints: FieldMap;
  actions: readonly ProtocolActionData[];
}

const RAW_AMOUNT = 'string (raw integer units, e.g. "1000000" = 1 USDC with 6 decimals; supports {{@nodeId:Label.field}} templates)';
const MAX_UINT = '115792089237316195423570985008687907853269984665640564039457584007913129639935';

/** Aave 3.2 removed stable-rate borrowing; 2 (variable) is the only mode the Pool accepts. */
const VARIABLE_RATE = '2';

const aaveV3Pool: ProtocolData = {
  protocol: 'aave-v3',
  protocolName: 'Aave V3',
  contract: 'Pool',
  addresses: {
    1: '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2',
    8453: '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5',
    42161: '0x794a61358D6845594F94dc1DB02A252b5b4814aD',
    10: '0x794a61358D6845594F94dc1DB02A252b5b4814aD',
    137: '0x794a61358D6845594F94dc1DB02A252b5b4814aD',
    11155111: '0x6Ae43d3271ff6888e7Fc43Fd7321a503ff738951',
    84532: '0x07eA79F68B2B3df564D0A34F8e19D9B1e339814b',
  },
  featureId: 'protocol-aave-v3',
  fieldHints: {
    network: 'string (chain ID: one of 1, 8453, 42161, 10, 137, 11155111, 84532)',
    asset: 'string (0x address of the underlying ERC-20, e.g. USDC)',
    amount: RAW_AMOUNT,
    onBehalfOf: hint.address,
    to: hint.address,
    user: hint.address,
  },
  outputHints: {
    totalCollateralBase: 'string (integer, base currency: USD with 8 decimals)',
    totalDebtBase: 'string (integer, base currency: USD with 8 decimals)',
    availableBorrowsBase: 'string (integer, base currency: USD with 8 decimals)',
    currentLiquidationThreshold: 'string (integer, basis points: 8250 = 82.5%)',
    ltv: 'string (integer, basis points)',
    healthFactor: 'string (integer, 18 decimals; below 1e18 the position can be liquidated)',
  },
  actions: [
    {
      slug: 'supply',
      label: 'Aave V3: Supply',
      description:
        'Supplies an ERC-20 asset to the Aave V3 Pool to earn interest and back borrowing. Approve the Pool address of the chain as spender (web3/approve-token) first.',
      functionName: 'supply',
      kind: 'write',
      abi: {
        type: 'function',
        name: 'supply',
        stateMutability: 'nonpayable',
        inputs: [
          { name: 'asset', type: 'address' },
          { name: 'amount', type: 'uint256' },
          { name: 'onBehalfOf', type: 'address' },
          { name: 'referralCode', type: 'uint16' },
        ],
        outputs: [],
      },
      args: [
        { name: 'asset', type: 'address', field: 'asset' },
        { name: 'amount', type: 'uint256', field: 'amount' },
        { name: 'onBehalfOf', type: 'address', field: 'onBehalfOf' },
        { name: 'referralCode', type: 'uint16', constant: '0' },
      ],
      keywords: ['deposit', 'lend', 'earn', 'yield', 'collateral'],
      exampleConfig: {
        actionType: 'aave-v3/supply',
        network: '8453',
        asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        amount: '1000000',
        onBehalfOf: '{{@trigger:Manual Trigger.wallet}}',
      },
    },
    {
      slug: 'withdraw',
      label: 'Aave V3: Withdraw',
      description: `Withdraws a supplied asset from the Aave V3 Pool to an address (default: the acting wallet). An amount of ${MAX_UINT} (2^256-1) withdraws the whole balance.`,
      functionName: 'withdraw',
      kind: 'write',
      abi: {
        type: 'function',
        name: 'withdraw',
        stateMutability: 'nonpayable',
        inputs: [
          { name: 'asset', type: 'address' },
          { name: 'amount', type: 'uint256' },
          { name: 'to', type: 'address' },
        ],
        outputs: [{ name: '', type: 'uint256' }],
      },
      args: [
        { name: 'asset', type: 'address', field: 'asset' },
        { name: 'amount', type: 'uint256', field: 'amount' },
        { name: 'to', type: 'address', field: 'to', fallback: 'wallet' },
      ],
      keywords: ['redeem', 'remove', 'unstake', 'exit'],
    },
    {
      slug: 'borrow',
      label: 'Aave V3: Borrow',
      description: 'Borrows an asset at the variable rate against collateral already supplied. Check healthFactor with aave-v3/get-user-account-data first.',
      functionName: 'borrow',
      kind: 'write',
      abi: {
        type: 'function',
        name: 'borrow',
        stateMutability: 'nonpayable',
        inputs: [
          { name: 'asset', type: 'address' },
          { name: 'amount', type: 'uint256' },
          { name: 'interestRateMode', type: 'uint256' },
          { name: 'referralCode', type: 'uint16' },
          { name: 'onBehalfOf', type: 'address' },
        ],
        outputs: [],
      },
      args: [
        { name: 'asset', type: 'address', field: 'asset' },
        { name: 'amount', type: 'uint256', field: 'amount' },
        { name: 'interestRateMode', type: 'uint256', constant: VARIABLE_RATE },
        { name: 'referralCode', type: 'uint16', constant: '0' },
        { name: 'onBehalfOf', type: 'address', field: 'onBehalfOf', fallback: 'wallet' },
      ],
      keywords: ['loan', 'debt', 'leverage', 'credit'],
    },
    {
      slug: 'repay',
      label: 'Aave V3: Repay',
      description: `Repays variable-rate debt with the borrowed asset. Approve the Pool as spender first; an amount of ${MAX_UINT} (2^256-1) repays the whole debt.`,
      functionName: 'repay',
      kind: 'write',
      abi: {
        type: 'function',
        name: 'repay',
        stateMutability: 'nonpayable',
        inputs: [
          { name: 'asset', type: 'address' },
          { name: 'amount', type: 'uint256' },
          { name: 'interestRateMode', type: 'uint256' },
          { name: 'onBehalfOf', type: 'address' },
        ],
        outputs: [{ name: '', type: 'uint256' }],
      },
      args: [
        { name: 'asset', type: 'address', field: 'asset' },
        { name: 'amount', type: 'uint256', field: 'amount' },
        { name: 'interestRateMode', type: 'uint256', constant: VARIABLE_RATE },
        { name: 'onBehalfOf', type: 'address', field: 'onBehalfOf', fallback: 'wallet' },
      ],
      keywords: ['payback', 'pay back', 'debt', 'loan', 'deleverage'],
    },
    {
      slug: 'get-user-account-data',
      label: 'Aave V3: Get User Account Data',
      description: "Reads a user's Aave V3 position: collateral, debt, borrowing power, liquidation threshold, LTV and health factor.",
      functionName: 'getUserAccountData',
      kind: 'read',
      abi: {
        type: 'function',
        name: 'getUserAccountData',
        stateMutability: 'view',
        inputs: [{ name: 'user', type: 'address' }],
        outputs: [
          { name: 'totalCollateralBase', type: 'uint256' },
          { name: 'totalDebtBase', type: 'uint256' },
          { name: 'availableBorrowsBase', type: 'uint256' },
          { name: 'currentLiquidationThreshold', type: 'uint256' },
          { name: 'ltv', type: 'uint256' },
          { name: 'healthFactor', type: 'uint256' },
        ],
      },
      args: [{ name: 'user', type: 'address', field: 'user' }],
      keywords: ['health factor', 'position', 'collateral', 'liquidation', 'ltv', 'risk'],
    },
  ],
};

export const protocols: readonly ProtocolData[] = [aaveV3Pool];

function fieldHint(data: ProtocolData, field: string): string {
  const value = data.fieldHints[field];
  if (!value) throw new Error(`protocol ${data.protocol}: no type hint for field ${field}`);
  return value;
}

function toSpec(data: ProtocolData, action: ProtocolActionData): PluginActionSpec {
  const required: Record<string, string> = { network: fieldHint(data, 'network') };
  const optional: Record<string, string> = {};
  for (const arg of action.args) {
    if (!('field' in arg)) continue;
    const text = fieldHint(data, arg.field);
    if (arg.fallback === undefined) required[arg.field] = text;
    else optional[arg.field] = arg.fallback === 'wallet' ? `${text}; default: the acting wallet` : `${text}; default: ${arg.fallback}`;
  }
  const outputs = action.abi.outputs.filter((o) => o.name).map((o) => ({ name: o.name as string, type: o.type }));
  const binding: ProtocolBinding = {
    protocol: data.protocol,
    protocolName: data.protocolName,
    contract: data.contract,
    addresses: data.addresses,
    kind: action.kind,
    functionName: action.functionName,
    abi: action.abi,
    args: action.args,
    outputs: action.kind === 'read' ? outputs : [],
    keywords: action.keywords,
  };
  return {
    actionType: `${data.protocol}/${action.slug}`,
    label: action.label,
    description: action.description,
    category: 'DeFi',
    integration: data.protocol,
    requiredFields: required,
    optionalFields: action.kind === 'write' ? { ...optional, ...writeRouting } : optional,
    outputFields: action.kind === 'write' ? writeOutputs : Object.fromEntries(binding.outputs.map((o) => [o.name, fieldHintOr(data.outputHints, o)])),
    // Writes sign with the organization wallet; reads need nothing.
    requiresCredentials: action.kind === 'write',
    featureId: data.featureId,
    protocol: binding,
    ...(action.exampleConfig ? { exampleConfig: action.exampleConfig } : {}),
  };
}

const fieldHintOr = (hints: FieldMap, output: { name: string; type: string }) => hints[output.name] ?? output.type;

export const protocolActions: readonly PluginActionSpec[] = protocols.flatMap((p) => p.actions.map((a) => toSpec(p, a)));
