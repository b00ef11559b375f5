import { CONDITION_OPERATORS } from '../../actions/system.ts';
import { evaluateExpression, SandboxError } from '../../sandbox/quickjs.ts';
import { evaluateSimpleCondition, UNSUPPORTED } from '../../sandbox/simple-expression.ts';
import { compareDecimal, toDecimal } from './math-aggregate.ts';
import { NodeError, type NodeRunner } from './types.ts';
import { isRecord } from '../../is-record.ts';

/**
 * `Condition`: decides which handle (`true` / `false`) the run follows.
 *
 * Structured rules (`conditionConfig: {group: {logic: 'AND'|'OR', rules:
 * [{leftOperand, operator, rightOperand}]}}`, groups may nest) are evaluated
 * here in TypeScript. An operand that is a string naming a binding (`__t0`,
 * supplied by the executor) reads that binding; any other operand is a
 * literal JSON value, used as is. Semantics:
 * - `== !=`: JavaScript loose equality, except that two numbers or numeric
 *   strings compare as exact decimals ("1.0" == 1, big integers exact);
 * - `=== !==`: JavaScript strict equality;
 * - `> >= < <=`: exact decimal comparison when both sides are numbers or
 *   numeric strings, JavaScript comparison otherwise;
 * - for all equalities, two objects/arrays compare by JSON content (their
 *   references mean nothing in a workflow);
 * - `contains`: substring of a string (or a number's digits), element of an
 *   array (loose equality), own key of an object;
 * - `startsWith endsWith`: on strings and numbers;
 * - `matchesRegex`: the right operand is a pattern, "^0x" or "/^0x/i"; it
 *   runs in the sandbox under a time limit (no catastrophic backtracking);
 * - `isEmpty isNotEmpty`: undefined, null, "", [] and {} are empty;
 * - `exists doesNotExist`: anything but undefined and null exists.
 *
 * Otherwise `condition` is a JavaScript expression (upstream values already
 * bound as `__t0`, `__t1`, ... by the executor), evaluated in the sandbox and
 * coerced to boolean with JavaScript truthiness.
 */

type Bindings = Record<string, unknown>;

const REGEX_TIMEOUT_MS = 1000;
const MAX_PATTERN_CHARS = 1000;
const MAX_REGEX_INPUT_CHARS = 100_000;

/** `organizationId`: whose fair share of the sandbox an expression or a pattern that needs it counts against. */
export async function evaluateCondition(
  config: { condition?: unknown; conditionConfig?: unknown },
  bindings: Bindings,
  organizationId?: string,
): Promise<{ result: boolean }> {
  const group = structuredGroup(config.conditionConfig);
  if (group) return { result: await evaluateGroup(group, bindings, 'conditionConfig.group', organizationId) };
  return { result: await evaluateExpressionCondition(config.condition, bindings, organizationId) };
}

export const conditionRunner: NodeRunner = async (config, ctx) => {
  const bindings = isRecord(config.__bindings) ? config.__bindings : {};
  const { result } = await evaluateCondition({ condition: config.condition, conditionConfig: config.conditionConfig }, bindings, ctx.organizationId);
  return { success: true, data: { result }, result };
};

/** The rule group of a conditionConfig (an object or its JSON text), if it has one. */
function structuredGroup(conditionConfig: unknown): Record<string, unknown> | undefined {
  let value = conditionConfig;
  if (typeof value === 'string' && value.trim().startsWith('{')) {
    try {
      value = JSON.parse(value);
    } catch (error) {
      throw new NodeError(`conditionConfig is not valid JSON: ${(error as Error).message}.`, { field: 'conditionConfig' });
    }
  }
  if (!isRecord(value)) return undefined;
  if (isRecord(value.group)) return value.group;
  return Array.isArray(value.rules) ? value : undefined;
}

// ---------------------------------------------------------------------------
// Expressions

async function evaluateExpressionCondition(condition: unknown, bindings: Bindings, organizationId: string | undefined): Promise<boolean> {
  if (typeof condition === 'boolean') return condition;
  if (typeof condition === 'number') return condition !== 0 && !Number.isNaN(condition);
  if (typeof condition !== 'string' || condition.trim() === '') {
    throw new NodeError(
      'Condition needs a condition (a JavaScript expression such as "{{@balance:Check Balance.balance}} > 0.1") or a conditionConfig with {group: {logic, rules}}.',
      { field: 'condition' },
    );
  }
  const simple = evaluateSimpleCondition(condition, bindings);
  if (simple !== UNSUPPORTED) return simple;
  try {
    // Coerced inside the sandbox, so any value (even a function) has a truthiness.
    return (await evaluateExpression(`!!(\n${condition}\n)`, bindings, { organizationId })) === true;
  } catch (error) {
    if (!(error instanceof SandboxError)) throw error;
    const hint = /ReferenceError/.test(error.message) ? ' Read upstream values with templates such as {{@nodeId:Label.field}}.' : '';
    const detail = error.message.replace(/\.$/, '');
    const message = detail.startsWith('Expression ') ? `Condition expression ${detail.slice('Expression '.length)}` : `Condition failed: ${detail}`;
    throw new NodeError(`${message}.${hint}`, { field: 'condition', kind: error.kind });
  }
}

// ---------------------------------------------------------------------------
// Structured rules

async function evaluateGroup(group: Record<string, unknown>, bindings: Bindings, path: string, organizationId: string | undefined): Promise<boolean> {
  const logic = group.logic === undefined ? 'AND' : typeof group.logic === 'string' ? group.logic.trim().toUpperCase() : '';
  if (logic !== 'AND' && logic !== 'OR') {
    throw new NodeError(`${path}.logic must be "AND" or "OR"; received ${JSON.stringify(group.logic)}.`, { field: 'conditionConfig' });
  }
  const rules = group.rules;
  if (!Array.isArray(rules) || rules.length === 0) {
    throw new NodeError(`${path}.rules must be a non-empty array of {leftOperand, operator, rightOperand}.`, { field: 'conditionConfig' });
  }
  for (const [index, rule] of rules.entries()) {
    const at = `${path}.rules[${index}]`;
    let passed: boolean;
    if (isRecord(rule) && isRecord(rule.group)) passed = await evaluateGroup(rule.group, bindings, `${at}.group`, organizationId);
    else if (isRecord(rule) && Array.isArray(rule.rules)) passed = await evaluateGroup(rule, bindings, at, organizationId);
    else passed = await evaluateRule(rule, bindings, at, organizationId);
    // Short-circuit like && and ||.
    if (logic === 'AND' && !passed) return false;
    if (logic === 'OR' && passed) return true;
  }
  return logic === 'AND';
}

const operand = (value: unknown, bindings: Bindings): unknown =>
  typeof value === 'string' && Object.prototype.hasOwnProperty.call(bindings, value) ? bindings[value] : value;

async function evaluateRule(rule: unknown, bindings: Bindings, at: string, organizationId: string | undefined): Promise<boolean> {
  if (!isRecord(rule)) throw new NodeError(`${at} must be an object {leftOperand, operator, rightOperand}.`, { field: 'conditionConfig' });
  const operator = rule.operator;
  const left = operand(rule.leftOperand, bindings);
  const right = operand(rule.rightOperand, bindings);
  switch (operator) {
    case '==':
      return looseEquals(left, right);
    case '!=':
      return !looseEquals(left, right);
    case '===':
      return strictEquals(left, right);
    case '!==':
      return !strictEquals(left, right);
    case '>':
    case '>=':
    case '<':
    case '<=':
      return compare(operator, left, right);
    case 'contains':
      return contains(left, right);
    case 'startsWith':
      return isText(left) && right !== undefined && right !== null && String(left).startsWith(String(right));
    case 'endsWith':
      return isText(left) && right !== undefined && right !== null && String(left).endsWith(String(right));
    case 'matchesRegex':
      return matchesRegex(left, right, at, organizationId);
    case 'isEmpty':
      return isEmpty(left);
    case 'isNotEmpty':
      return !isEmpty(left);
    case 'exists':
      return left !== undefined && left !== null;
    case 'doesNotExist':
      return left === undefined || left === null;
    default:
      throw new NodeError(`${at}.operator ${JSON.stringify(operator ?? null)} is not a Condition operator; use one of ${CONDITION_OPERATORS.join(' ')}.`, {
        field: 'conditionConfig',
        received: operator ?? null,
      });
  }
}

const isText = (value: unknown): value is string | number => typeof value === 'string' || typeof value === 'number';
const isNumeric = (value: unknown) => (typeof value === 'number' || typeof value === 'string') && toDecimal(value) !== undefined;
const isObject = (value: unknown): value is object => value !== null && typeof value === 'object';

function looseEquals(left: unknown, right: unknown): boolean {
  if (isNumeric(left) && isNumeric(right)) return compareDecimal(toDecimal(left)!, toDecimal(right)!) === 0;
  if (isObject(left) && isObject(right)) return sameJson(left, right, looseEquals);
  // Loose equality is what the operator means here.
  return (left as never) == (right as never);
}

function strictEquals(left: unknown, right: unknown): boolean {
  if (isObject(left) && isObject(right)) return sameJson(left, right, strictEquals);
  return left === right;
}

/** Same JSON shape, leaves compared with `leaf`. */
function sameJson(left: object, right: object, leaf: (a: unknown, b: unknown) => boolean): boolean {
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  const leftKeys = Object.keys(left);
  const rightKeys = Object.keys(right);
  if (leftKeys.length !== rightKeys.length) return false;
  return leftKeys.every(
    (key) => Object.prototype.hasOwnProperty.call(right, key) && leaf((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]),
  );
}

function compare(operator: '>' | '>=' | '<' | '<=', left: unknown, right: unknown): boolean {
  if (isNumeric(left) && isNumeric(right)) {
    const order = compareDecimal(toDecimal(left)!, toDecimal(right)!);
    return operator === '>' ? order > 0 : operator === '>=' ? order >= 0 : operator === '<' ? order < 0 : order <= 0;
  }
  const a = left as never;
  const b = right as never;
  return operator === '>' ? a > b : operator === '>=' ? a >= b : operator === '<' ? a < b : a <= b;
}

function contains(left: unknown, right: unknown): boolean {
  if (Array.isArray(left)) return left.some((item) => looseEquals(item, right));
  if (isText(left)) return right !== undefined && right !== null && String(left).includes(String(right));
  if (isObject(left)) return typeof right === 'string' && Object.prototype.hasOwnProperty.call(left, right);
  return false;
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isObject(value)) return Object.keys(value).length === 0;
  return false;
}

/** "/source/flags" or a bare source. */
function parsePattern(pattern: string): { source: string; flags: string } {
  const literal = /^\/([\s\S]+)\/([a-z]*)$/.exec(pattern);
  return literal ? { source: literal[1]!, flags: literal[2]! } : { source: pattern, flags: '' };
}

async function matchesRegex(left: unknown, right: unknown, at: string, organizationId: string | undefined): Promise<boolean> {
  if (typeof right !== 'string' || right === '') {
    throw new NodeError(`${at}.rightOperand must be a regular expression pattern such as "^0x[0-9a-fA-F]{40}$" or "/^usdc$/i".`, { field: 'conditionConfig' });
  }
  if (right.length > MAX_PATTERN_CHARS) throw new NodeError(`${at}.rightOperand is longer than ${MAX_PATTERN_CHARS} characters.`, { field: 'conditionConfig' });
  if (!isText(left) && typeof left !== 'boolean') return false;
  const text = String(left);
  if (text.length > MAX_REGEX_INPUT_CHARS) {
    throw new NodeError(`${at}.leftOperand is ${text.length} characters long; matchesRegex accepts at most ${MAX_REGEX_INPUT_CHARS}.`, {
      field: 'conditionConfig',
    });
  }
  const { source, flags } = parsePattern(right);
  try {
    // In the sandbox: a pattern that backtracks catastrophically is stopped by the time limit.
    const matched = await evaluateExpression(
      'new RegExp(__source, __flags).test(__text)',
      { __source: source, __flags: flags, __text: text },
      { timeoutMs: REGEX_TIMEOUT_MS, organizationId },
    );
    return matched === true;
  } catch (error) {
    if (!(error instanceof SandboxError)) throw error;
    const reason =
      error.kind === 'timeout'
        ? `took longer than ${REGEX_TIMEOUT_MS} ms (catastrophic backtracking?); simplify the pattern`
        : `is not a valid regular expression (${error.message.replace(/^Expression threw /, '')})`;
    throw new NodeError(`${at}: the pattern ${JSON.stringify(right)} ${reason}.`, { field: 'conditionConfig', kind: error.kind });
  }
}
