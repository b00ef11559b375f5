import { AGGREGATE_OPERATIONS } from '../../actions/compute.ts';
import { NodeError, type NodeRunner } from './types.ts';

/**
 * `math/aggregate`: reduces a list of numbers (or one property of a list of
 * objects) to one number.
 *
 * - `operation`: sum, average (also avg, mean), min, max, count, median, product.
 * - `values`: an array, a JSON array string, or a comma-separated string
 *   ("1, 2.5, 3"). Items are numbers or numeric strings ("0.1", "1e18");
 *   anything else fails the node naming the index and the value.
 * - `field`: a dot path read from each item when items are objects
 *   ("balance", "token.amount", "amounts.0").
 * - `count` counts items whatever they hold; on an empty list count and sum
 *   are 0 and the other operations fail.
 *
 * Arithmetic is exact decimal (BigInt scaled by a power of ten), so
 * "0.1" + "0.2" is 0.3, and sums of 18-decimal token amounts stay exact. The
 * `result` number is the nearest double to the exact value (an average is
 * exact to 30 more decimal places first); `data.decimal` carries the exact
 * value as a decimal string. Sizes are bounded, as this runs on the event
 * loop: a numeric string has at most 400 characters, and a product past
 * 4000 integer digits or decimal places fails the node.
 */

// ---------------------------------------------------------------------------
// Exact decimals (also used by Condition's numeric comparisons)

/** value = units × 10^-scale, scale ≥ 0. */
export interface Decimal {
  units: bigint;
  scale: number;
}

/** `\d+(\.\d*)?`, not `\d+\.?\d*`: two digit runs that can split a long run of digits any way backtrack in quadratic time. */
const NUMERIC = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
/** Exponents beyond this are refused: BigInt powers of huge exponents would stall the process. */
const MAX_EXPONENT = 400;
/** Longer text is not a number: it bounds the digits of every operand, so each step of an aggregation or comparison stays cheap. */
const MAX_NUMBER_CHARS = 400;
/** Results (integer digits or decimal places) past this are refused: a product's digits grow with every value. */
const MAX_DECIMAL_DIGITS = 4000;
const DIGITS_LIMIT = 10n ** BigInt(MAX_DECIMAL_DIGITS);
const DIVISION_EXTRA_DIGITS = 30;

/** A number, bigint or numeric string as an exact decimal; undefined when it is not one. */
export function toDecimal(value: unknown): Decimal | undefined {
  if (typeof value === 'bigint') return { units: value, scale: 0 };
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return undefined;
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    return undefined;
  }
  if (text.length > MAX_NUMBER_CHARS || !NUMERIC.test(text)) return undefined;
  const [mantissa, exponentText] = text.toLowerCase().split('e') as [string, string | undefined];
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  if (Math.abs(exponent) > MAX_EXPONENT) return undefined;
  const negative = mantissa.startsWith('-');
  const unsigned = mantissa.replace(/^[+-]/, '');
  const [whole, fraction = ''] = unsigned.split('.') as [string, string | undefined];
  let units = BigInt((whole || '0') + fraction);
  let scale = fraction.length - exponent;
  if (scale < 0) {
    units *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { units: negative ? -units : units, scale };
}

const rescale = (value: Decimal, scale: number): bigint => value.units * 10n ** BigInt(scale - value.scale);

export function compareDecimal(a: Decimal, b: Decimal): -1 | 0 | 1 {
  const scale = Math.max(a.scale, b.scale);
  const left = rescale(a, scale);
  const right = rescale(b, scale);
  return left < right ? -1 : left > right ? 1 : 0;
}

function addDecimal(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { units: rescale(a, scale) + rescale(b, scale), scale };
}

const multiplyDecimal = (a: Decimal, b: Decimal): Decimal => ({ units: a.units * b.units, scale: a.scale + b.scale });

/** `value`, or a step error when its exact decimal needs more than MAX_DECIMAL_DIGITS digits. */
function bounded(value: Decimal, operation: string, index: number): Decimal {
  const units = value.units < 0n ? -value.units : value.units;
  if (value.scale <= MAX_DECIMAL_DIGITS && units < DIGITS_LIMIT) return value;
  throw new NodeError(
    `The ${operation} exceeds ${MAX_DECIMAL_DIGITS} digits at values[${index}]: exact results are limited to ${MAX_DECIMAL_DIGITS} integer digits or decimal places.`,
    { field: 'values', index },
  );
}

/** a / divisor, exact to DIVISION_EXTRA_DIGITS more decimal places (truncated). */
function divideDecimal(a: Decimal, divisor: bigint): Decimal {
  const extra = BigInt(DIVISION_EXTRA_DIGITS);
  return { units: (a.units * 10n ** extra) / divisor, scale: a.scale + DIVISION_EXTRA_DIGITS };
}

export function decimalToString(value: Decimal): string {
  const negative = value.units < 0n;
  const digits = (negative ? -value.units : value.units).toString().padStart(value.scale + 1, '0');
  const whole = digits.slice(0, digits.length - value.scale);
  // Trailing zeros cut by a loop: `/0+$/` retried from every zero of a long run (quadratic).
  let end = digits.length;
  while (end > whole.length && digits.charCodeAt(end - 1) === 48) end--;
  const fraction = digits.slice(whole.length, end);
  const text = fraction ? `${whole}.${fraction}` : whole;
  return negative && text !== '0' ? `-${text}` : text;
}

const decimalToNumber = (value: Decimal): number => Number(decimalToString(value));

// ---------------------------------------------------------------------------
// Inputs

const OPERATIONS: Readonly<Record<string, Operation>> = AGGREGATE_OPERATIONS;
type Operation = (typeof AGGREGATE_OPERATIONS)[keyof typeof AGGREGATE_OPERATIONS];
const OPERATION_NAMES = 'sum, average (or avg, mean), min, max, count, median, product';

function parseOperation(value: unknown): Operation {
  const key = typeof value === 'string' ? value.trim().toLowerCase() : '';
  const operation = OPERATIONS[key];
  if (!operation) {
    throw new NodeError(`operation ${JSON.stringify(value ?? null)} is not supported; use one of ${OPERATION_NAMES}.`, {
      field: 'operation',
      received: value ?? null,
    });
  }
  return operation;
}

const preview = (value: unknown): string => {
  const text = typeof value === 'string' ? JSON.stringify(value) : value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
};

/** The list to aggregate: an array, a JSON array string, or comma-separated text. */
function parseValues(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  if (typeof value === 'number' || typeof value === 'bigint') return [value];
  if (typeof value === 'string') {
    const text = value.trim();
    if (text === '') return [];
    if (text.startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        throw new NodeError(`values looks like a JSON array but does not parse: ${(error as Error).message}.`, { field: 'values' });
      }
      if (!Array.isArray(parsed)) throw new NodeError('values must be a JSON array.', { field: 'values' });
      return parsed;
    }
    return text.split(',').map((item) => item.trim());
  }
  if (value === undefined || value === null) {
    throw new NodeError('values is required: an array of numbers, a JSON array string, or comma-separated numbers.', { field: 'values' });
  }
  throw new NodeError(`values must be an array, a JSON array string or comma-separated numbers; received ${preview(value)}.`, {
    field: 'values',
    received: value,
  });
}

/** Reads a dot path ("a.b.0.c") from an item; undefined when any step is missing. */
function readPath(item: unknown, path: readonly string[]): unknown {
  let current = item;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || !Object.prototype.hasOwnProperty.call(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function pickField(items: unknown[], field: unknown): unknown[] {
  if (field === undefined || field === null || field === '') return items;
  if (typeof field !== 'string') throw new NodeError(`field must be a property path string such as "balance"; received ${preview(field)}.`, { field: 'field' });
  const path = field.split('.').map((part) => part.trim());
  return items.map((item, index) => {
    const picked = readPath(item, path);
    if (picked === undefined) {
      throw new NodeError(`values[${index}] has no "${field}" to aggregate (received ${preview(item)}).`, { field: 'values', index, received: item });
    }
    return picked;
  });
}

function toNumbers(items: unknown[], field: unknown): Decimal[] {
  return items.map((item, index) => {
    const decimal = toDecimal(item);
    if (decimal) return decimal;
    const hint =
      item !== null && typeof item === 'object' && !field
        ? '; set field to the property to aggregate, e.g. "balance"'
        : typeof item === 'string' && item.trim().length > MAX_NUMBER_CHARS
          ? ` (${item.trim().length} characters; a number has at most ${MAX_NUMBER_CHARS})`
          : '';
    const where = field ? `values[${index}].${field}` : `values[${index}]`;
    throw new NodeError(`${where} is not a number: received ${preview(item)}${hint}.`, { field: 'values', index, received: item });
  });
}

// ---------------------------------------------------------------------------
// Aggregation

export interface AggregateResult {
  result: number;
  /** The exact value as a decimal string. */
  decimal: string;
  count: number;
  operation: Operation;
}

export function aggregate(config: { operation?: unknown; values?: unknown; field?: unknown }): AggregateResult {
  const operation = parseOperation(config.operation);
  const items = pickField(parseValues(config.values), config.field);
  const count = items.length;
  const done = (value: Decimal): AggregateResult => {
    const result = decimalToNumber(value);
    const decimal = decimalToString(value);
    if (!Number.isFinite(result))
      throw new NodeError(`The ${operation} (${decimal.slice(0, 24)}…, ${decimal.length} digits) is too large for a number.`, { field: 'values' });
    return { result, decimal, count, operation };
  };

  if (operation === 'count') return { result: count, decimal: String(count), count, operation };
  const numbers = toNumbers(items, config.field);
  const zero: Decimal = { units: 0n, scale: 0 };
  if (operation === 'sum') return done(numbers.reduce(addDecimal, zero));
  if (count === 0) throw new NodeError(`Cannot compute the ${operation} of an empty list.`, { field: 'values' });

  switch (operation) {
    case 'average':
      return done(divideDecimal(numbers.reduce(addDecimal, zero), BigInt(count)));
    case 'product':
      // Checked at every step, so a long list stops growing at the bound instead of after megabytes of digits.
      return done(numbers.reduce((a, b, index) => bounded(multiplyDecimal(a, b), operation, index), { units: 1n, scale: 0 }));
    case 'min':
      return done(numbers.reduce((a, b) => (compareDecimal(b, a) < 0 ? b : a)));
    case 'max':
      return done(numbers.reduce((a, b) => (compareDecimal(b, a) > 0 ? b : a)));
    case 'median': {
      const sorted = [...numbers].sort(compareDecimal);
      const middle = Math.floor(count / 2);
      if (count % 2 === 1) return done(sorted[middle]!);
      // Exact halving: (a + b) × 5 / 10.
      const sum = addDecimal(sorted[middle - 1]!, sorted[middle]!);
      return done({ units: sum.units * 5n, scale: sum.scale + 1 });
    }
  }
}

export const mathAggregateRunner: NodeRunner = async (config) => {
  const { result, decimal, count, operation } = aggregate(config);
  return { success: true, data: { result, count, operation, decimal }, result };
};
