import { decodeFunctionData, formatUnits, parseAbi, type Address, type Hex } from 'viem';
import { protocols } from '../actions/protocols.ts';

/**
 * The per-transaction stablecoin limit (SPEC Limits: 100 USD by default, a
 * 1:1 peg applied to the token's decimals) on every write path: ERC-20
 * `transfer`, `transferFrom`, and approvals (`approve`, `increaseAllowance`)
 * to a spender that is not a known protocol contract. Any other call to a
 * stablecoin is refused. Checked before signing; a refusal signs nothing.
 */

export interface StablecoinInfo {
  symbol: string;
  decimals: number;
}

export interface StablecoinLookup {
  lookup(chainId: number, address: string): StablecoinInfo | undefined;
}

const ERC20_MOVES = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function transferFrom(address from, address to, uint256 amount)',
  'function approve(address spender, uint256 amount)',
  // Raise an allowance by `amount`: an approval (USDC's FiatToken and OpenZeppelin tokens have it; older ones spell it increaseApproval).
  'function increaseAllowance(address spender, uint256 amount)',
  'function increaseApproval(address spender, uint256 amount)',
  // Lowers an allowance: moves nothing, so it is let through whatever the amount.
  'function decreaseAllowance(address spender, uint256 amount)',
  'function decreaseApproval(address spender, uint256 amount)',
]);

const APPROVALS = new Set(['approve', 'increaseAllowance', 'increaseApproval']);
const ALLOWED_FUNCTIONS = [...new Set(ERC20_MOVES.map((item) => item.name))].join(', ');

/** Addresses of protocol contracts (per chain) that may receive stablecoin approvals of any size. */
function protocolSpenders(chainId: number): Set<string> {
  return new Set(protocols.map((p) => p.addresses[chainId]?.toLowerCase()).filter((a): a is string => Boolean(a)));
}

/** "150" → "150.0": the limit's message always shows a decimal point. */
const withPoint = (text: string) => (text.includes('.') ? text : `${text}.0`);

/** The refusal message when this call moves more stablecoin than the limit, else undefined. */
export function stablecoinLimitViolation(
  lookup: StablecoinLookup,
  capMicroUsd: bigint,
  call: { chainId: number; to: Address; data?: Hex },
): string | undefined {
  if (!call.data || call.data.length < 10) return undefined;
  const token = lookup.lookup(call.chainId, call.to);
  if (!token) return undefined;
  let decoded;
  try {
    decoded = decodeFunctionData({ abi: ERC20_MOVES, data: call.data });
  } catch {
    // Fail closed: a stablecoin has other ways to move or expose funds (permit, transferWithAuthorization, a
    // token's own extensions) that this limit cannot weigh, so the wallet calls none of them.
    return `The call to ${token.symbol} (${call.to}) is not one this gateway signs for a stablecoin (selector ${call.data.slice(0, 10)}): only ${ALLOWED_FUNCTIONS}, each held to the per-transaction limit; nothing was signed.`;
  }
  if (decoded.functionName === 'decreaseAllowance' || decoded.functionName === 'decreaseApproval') return undefined;
  let amount: bigint;
  let verb = 'transfer';
  if (APPROVALS.has(decoded.functionName)) {
    const [spender, value] = decoded.args as readonly [Address, bigint];
    if (protocolSpenders(call.chainId).has(spender.toLowerCase())) return undefined;
    amount = value;
    verb = 'approval';
  } else {
    amount = decoded.functionName === 'transfer' ? (decoded.args[1] as bigint) : (decoded.args[2] as bigint);
  }
  // micro-USD at a 1:1 peg, rounded up so a fraction over the limit still counts as over.
  const scale = 10n ** BigInt(token.decimals);
  const microUsd = (amount * 1_000_000n + scale - 1n) / scale;
  if (microUsd <= capMicroUsd) return undefined;
  const human = withPoint(formatUnits(amount, token.decimals));
  const limit = withPoint(formatUnits(capMicroUsd, 6));
  const subject =
    verb === 'approval' ? `Stablecoin approval of ${human} ${token.symbol} to a non-protocol spender` : `Stablecoin transfer of ${human} ${token.symbol}`;
  return `${subject} exceeds the ${limit} USD per-transaction limit; nothing was signed. Split it into transfers of at most ${limit} ${token.symbol}.`;
}
