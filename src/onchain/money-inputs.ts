import { distance as editDistance } from 'fastest-levenshtein';
import { getAddress, isAddress, type Abi, type AbiFunction, type Address } from 'viem';
import { badRequest } from '../errors.ts';

/**
 * Parsers for what callers send on money paths. Each refuses anything it
 * cannot read exactly, with a message that names the field and the value.
 */

const HUMAN_AMOUNT = /^(0|[1-9]\d*|0\d+)(\.\d+)?$/;

/**
 * Human units ("1.5") to base units with `decimals`, exactly: no whitespace,
 * no sign, no exponent, no excess precision. Money input is never guessed at,
 * so `" 1"` is refused rather than trimmed.
 */
export function parseAmount(value: unknown, decimals: number, field = 'amount'): bigint {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || text === '')
    throw badRequest('invalid_amount', `${field} is required: a decimal string in human units such as "0.01".`, { field });
  const received = JSON.stringify(text);
  if (text !== text.trim() || /\s/.test(text))
    throw badRequest('invalid_amount', `${field} must not contain whitespace (got ${received}); send exactly "${text.trim()}".`, { field, received: text });
  if (text.startsWith('-')) throw badRequest('invalid_amount', `${field} must not be negative (got ${received}).`, { field, received: text });
  if (text.startsWith('+')) throw badRequest('invalid_amount', `${field} must be written without a sign (got ${received}).`, { field, received: text });
  if (/e/i.test(text))
    throw badRequest('invalid_amount', `${field} must be written without an exponent (got ${received}); write it out in full, e.g. "0.000001".`, {
      field,
      received: text,
    });
  if (!HUMAN_AMOUNT.test(text))
    throw badRequest('invalid_amount', `${field} must be a decimal number such as "0.01" (got ${received}).`, { field, received: text });
  const [whole, fraction = ''] = text.split('.') as [string, string?];
  const digits = fraction ?? '';
  if (digits.length > decimals) {
    throw badRequest('invalid_amount', `${field} "${text}" has ${digits.length} decimal places; this token has ${decimals}.`, {
      field,
      received: text,
      decimals,
    });
  }
  return BigInt(whole + digits.padEnd(decimals, '0'));
}

const SOLANA_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/**
 * An EVM address as SPEC's recipient rule reads: all lowercase, or exactly
 * its EIP-55 checksum (an all-uppercase hex body is accepted too: it carries
 * no checksum). Anything else names the address.
 */
export function parseEvmAddress(value: unknown, field: string, label = field): Address {
  if (typeof value !== 'string' || value.trim() === '') throw badRequest('invalid_address', `${field} is required: a 0x-prefixed 20-byte address.`, { field });
  const text = value.trim();
  if (SOLANA_ADDRESS.test(text) && !text.startsWith('0x')) {
    throw badRequest('invalid_address', `Invalid ${label}: ${text} looks like a Solana address, but the selected chain is an EVM chain.`, {
      field,
      received: text,
    });
  }
  if (!/^0x[0-9a-fA-F]{40}$/.test(text)) {
    throw badRequest('invalid_address', `Invalid ${label}: ${text} (expected 0x followed by 40 hex characters, got ${text.replace(/^0x/, '').length}).`, {
      field,
      received: text,
    });
  }
  if (!isAddress(text, { strict: true })) {
    const message = field === 'recipientAddress' || field === 'to_address' ? `Invalid recipient address: ${text}` : `Invalid ${label}: ${text}`;
    throw badRequest('invalid_address', message, {
      field,
      received: text,
      hint: `Mixed-case addresses must match their EIP-55 checksum (${getAddress(text.toLowerCase())}); or send the address all lowercase.`,
    });
  }
  return getAddress(text);
}

/** A JSON document given as a string (or already parsed). */
function parseJson(value: unknown, field: string): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch (error) {
    throw badRequest('invalid_json_field', `${field} must be valid JSON: ${(error as Error).message}.`, { field });
  }
}

export function parseAbiDocument(value: unknown, field = 'abi'): Abi {
  const abi = parseJson(value, field);
  if (!Array.isArray(abi))
    throw badRequest('invalid_abi', `${field} must be a JSON array of ABI entries (got ${abi === null ? 'null' : typeof abi}).`, { field });
  if (abi.some((e) => !e || typeof e !== 'object' || typeof (e as { type?: unknown }).type !== 'string')) {
    throw badRequest('invalid_abi', `${field} must contain ABI entries, each an object with a "type".`, { field });
  }
  return abi as Abi;
}

export function parseFunctionArgs(value: unknown, field = 'functionArgs'): unknown[] {
  if (value === undefined || value === null || value === '') return [];
  const args = parseJson(value, field);
  if (!Array.isArray(args))
    throw badRequest('invalid_function_args', `${field} must be a JSON array string such as '["0xabc…", "1000"]' (got ${typeof args}).`, { field });
  return args;
}

const MAX_ERROR_ABIS = 4;
const MAX_ERROR_ABI_BYTES = 16 * 1024;

/** `errorAbis`: up to 4 documents of 16 KB each, each declaring at least one error; used for revert decoding only. */
export function parseErrorAbis(value: unknown): Abi {
  if (value === undefined || value === null) return [];
  const list = parseJson(value, 'errorAbis');
  if (!Array.isArray(list))
    throw badRequest('invalid_error_abis', 'errorAbis must be an array of ABI documents (JSON strings or arrays).', { field: 'errorAbis' });
  if (list.length > MAX_ERROR_ABIS)
    throw badRequest('invalid_error_abis', `errorAbis holds at most ${MAX_ERROR_ABIS} documents (got ${list.length}).`, { field: 'errorAbis' });
  const errors: Abi[number][] = [];
  list.forEach((doc, index) => {
    const text = typeof doc === 'string' ? doc : JSON.stringify(doc);
    if (Buffer.byteLength(text, 'utf8') > MAX_ERROR_ABI_BYTES) {
      throw badRequest('invalid_error_abis', `errorAbis[${index}] is ${Buffer.byteLength(text, 'utf8')} bytes; each document may be at most 16 KB.`, {
        field: `errorAbis.${index}`,
      });
    }
    const abi = parseAbiDocument(doc, `errorAbis[${index}]`);
    const declared = abi.filter(
      (e) => e.type === 'error' && typeof (e as { name?: unknown }).name === 'string' && Array.isArray((e as { inputs?: unknown }).inputs),
    );
    if (declared.length === 0) {
      throw badRequest('invalid_error_abis', `errorAbis[${index}] declares no buildable error (no entry with type "error", a name and inputs).`, {
        field: `errorAbis.${index}`,
      });
    }
    errors.push(...declared);
  });
  return errors;
}

/** `functionName` and its alias `abiFunction`: when both are sent their trimmed values must agree. */
export function pickFunctionName(functionName: unknown, abiFunction: unknown): string | undefined {
  const a = typeof functionName === 'string' ? functionName.trim() : undefined;
  const b = typeof abiFunction === 'string' ? abiFunction.trim() : undefined;
  if (a && b && a !== b) {
    throw badRequest(
      'function_name_conflict',
      `functionName "${a}" and abiFunction "${b}" disagree; send one of them (abiFunction is an alias of functionName).`,
      { functionName: a, abiFunction: b },
    );
  }
  return a || b || undefined;
}

/** The ABI function called `name` (optionally `name(type,...)`) taking `argCount` arguments. */
export function findFunction(abi: Abi, name: string, argCount?: number): AbiFunction {
  const functions = abi.filter((e): e is AbiFunction => e.type === 'function');
  const bare = name.includes('(') ? name.slice(0, name.indexOf('(')) : name;
  const named = functions.filter((f) => f.name === bare);
  if (named.length === 0) {
    const closest = functions.map((f) => f.name).sort((x, y) => editDistance(x, bare) - editDistance(y, bare))[0];
    const hint = closest && editDistance(closest, bare) <= Math.max(2, bare.length / 3) ? ` Did you mean "${closest}"?` : '';
    throw badRequest(
      'function_not_found',
      `The ABI has no function "${bare}".${hint} Functions: ${
        functions
          .map((f) => f.name)
          .slice(0, 20)
          .join(', ') || '(none)'
      }.`,
      { functionName: bare },
    );
  }
  const signature = name.includes('(') ? name.replace(/\s+/g, '') : undefined;
  const match = named.find((f) =>
    signature ? `${f.name}(${f.inputs.map((i) => i.type).join(',')})` === signature : argCount === undefined || f.inputs.length === argCount,
  );
  if (!match) {
    const shapes = named.map((f) => `${f.name}(${f.inputs.map((i) => `${i.type} ${i.name ?? ''}`.trim()).join(', ')})`).join(' or ');
    throw badRequest(
      'function_args_mismatch',
      `${bare} takes ${named.map((f) => f.inputs.length).join(' or ')} argument(s) — ${shapes} — but functionArgs has ${argCount}.`,
      { functionName: bare },
    );
  }
  return match;
}

/** A decimal multiplier string between 1 and 10, e.g. "1.5". */
export function parseGasLimitMultiplier(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value);
  if (!/^\d+(\.\d{1,4})?$/.test(text) || Number(text) < 1 || Number(text) > 10) {
    throw badRequest('invalid_gas_limit_multiplier', `gasLimitMultiplier must be a decimal between 1 and 10 such as "1.5" (got ${JSON.stringify(value)}).`, {
      field: 'gasLimitMultiplier',
    });
  }
  return text;
}

export interface TokenConfig {
  address?: Address;
  decimals?: number;
  symbol?: string;
}

/**
 * `tokenConfig`: a JSON string with `decimals` and `symbol` (SPEC), or the
 * registry's `{mode:'custom', customToken:{address, symbol, decimals}}` form.
 */
export function parseTokenConfig(value: unknown): TokenConfig {
  if (value === undefined || value === null || value === '') return {};
  const doc = parseJson(value, 'tokenConfig');
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    throw badRequest('invalid_token_config', 'tokenConfig must be a JSON object such as {"decimals":6,"symbol":"USDC"}.', { field: 'tokenConfig' });
  const source = ((doc as { customToken?: unknown }).customToken ?? doc) as Record<string, unknown>;
  const out: TokenConfig = {};
  if (source.address !== undefined) out.address = parseEvmAddress(source.address, 'tokenConfig.address');
  if (source.decimals !== undefined) {
    const decimals = Number(source.decimals);
    if (!Number.isInteger(decimals) || decimals < 0 || decimals > 36)
      throw badRequest('invalid_token_config', `tokenConfig.decimals must be a whole number 0-36 (got ${JSON.stringify(source.decimals)}).`, {
        field: 'tokenConfig.decimals',
      });
    out.decimals = decimals;
  }
  if (source.symbol !== undefined) out.symbol = String(source.symbol);
  return out;
}
