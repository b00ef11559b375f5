import { afterAll, describe, expect, it } from 'vitest';
import { conditionRunner, evaluateCondition } from '../src/engine/runners/condition.ts';
import { aggregate, mathAggregateRunner } from '../src/engine/runners/math-aggregate.ts';
import { runCodeRunner } from '../src/engine/runners/run-code.ts';
import { NodeError, type NodeRunContext } from '../src/engine/runners/types.ts';
import { closeSandbox } from '../src/sandbox/quickjs.ts';

/** REFERENCE.md Action registry details: Condition, code/run-code, math/aggregate. */

afterAll(() => closeSandbox());

/** These runners use nothing from the context; the executor supplies a full one. */
const ctx = {} as NodeRunContext;

const rule = (leftOperand: unknown, operator: string, rightOperand?: unknown) => ({ leftOperand, operator, rightOperand });
const oneRule = (leftOperand: unknown, operator: string, rightOperand?: unknown, bindings: Record<string, unknown> = {}) =>
  evaluateCondition({ conditionConfig: { group: { logic: 'AND', rules: [rule(leftOperand, operator, rightOperand)] } } }, bindings).then((r) => r.result);

async function nodeError(promise: Promise<unknown>): Promise<NodeError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(NodeError);
    return error as NodeError;
  }
  throw new Error('expected a NodeError');
}

describe('Condition: structured rules', () => {
  it.each([
    [5, '==', '5', true],
    ['1.0', '==', 1, true],
    ['1000000000000000000001', '==', '1000000000000000000000', false],
    [null, '==', undefined, true],
    [0, '==', '', true],
    [[1, { a: 2 }], '==', [1, { a: '2' }], true],
    ['a', '!=', 'b', true],
    [5, '!=', '5.00', false],
    [5, '===', 5, true],
    [5, '===', '5', false],
    [{ a: [1] }, '===', { a: [1] }, true],
    [{ a: [1] }, '===', { a: ['1'] }, false],
    [5, '!==', '5', true],
    ['10', '>', '9', true],
    ['1000000000000000000001', '>', '1000000000000000000000', true],
    [0.3, '>=', '0.30', true],
    ['0.1', '<', 0.2, true],
    ['2e18', '<=', '2000000000000000000', true],
    ['apple', '<', 'banana', true],
    ['hello world', 'contains', 'o w', true],
    [[1, 2, 3], 'contains', '2', true],
    [[1, 2, 3], 'contains', 4, false],
    [{ usdc: 1 }, 'contains', 'usdc', true],
    [12345, 'contains', 234, true],
    [null, 'contains', 'x', false],
    ['0xabc', 'startsWith', '0x', true],
    ['0xabc', 'startsWith', 'ab', false],
    ['report.pdf', 'endsWith', '.pdf', true],
    [100, 'endsWith', 0, true],
    ['0xAbC123', 'matchesRegex', '^0x[0-9a-f]+$', false],
    ['0xAbC123', 'matchesRegex', '/^0x[0-9a-f]+$/i', true],
    [42, 'matchesRegex', '^\\d+$', true],
    ['', 'isEmpty', undefined, true],
    [[], 'isEmpty', undefined, true],
    [{}, 'isEmpty', undefined, true],
    [null, 'isEmpty', undefined, true],
    [0, 'isEmpty', undefined, false],
    [' ', 'isNotEmpty', undefined, true],
    [[0], 'isNotEmpty', undefined, true],
    [false, 'exists', undefined, true],
    [null, 'exists', undefined, false],
    [null, 'doesNotExist', undefined, true],
    ['', 'doesNotExist', undefined, false],
  ])('%j %s %j → %s', async (left, operator, right, expected) => {
    expect(await oneRule(left, operator, right)).toBe(expected);
  });

  it('reads operands that name a binding, and takes other operands literally', async () => {
    const bindings = { __t0: '0.25', __t1: ['USDC', 'DAI'] };
    expect(await oneRule('__t0', '>', 0.1, bindings)).toBe(true);
    expect(await oneRule('__t1', 'contains', 'DAI', bindings)).toBe(true);
    expect(await oneRule('__t9', '==', '__t9', bindings)).toBe(true);
    expect(await oneRule('__t0', '==', '__t0', {})).toBe(true);
  });

  it('combines rules with AND / OR, nested groups, and short-circuits', async () => {
    const rules = [rule(1, '==', 1), rule(1, '==', 2)];
    expect((await evaluateCondition({ conditionConfig: { group: { logic: 'AND', rules } } }, {})).result).toBe(false);
    expect((await evaluateCondition({ conditionConfig: { group: { logic: 'OR', rules } } }, {})).result).toBe(true);
    expect((await evaluateCondition({ conditionConfig: { group: { logic: 'or', rules } } }, {})).result).toBe(true);
    expect((await evaluateCondition({ conditionConfig: { group: { rules } } }, {})).result).toBe(false);
    const nested = {
      group: { logic: 'AND', rules: [rule('a', 'exists'), { group: { logic: 'OR', rules: [rule(1, '>', 2), rule('x', 'startsWith', 'x')] } }] },
    };
    expect((await evaluateCondition({ conditionConfig: nested }, {})).result).toBe(true);
    // The bad operator after a decided OR is never reached.
    const decided = { group: { logic: 'OR', rules: [rule(1, '==', 1), rule(1, 'bogus', 1)] } };
    expect((await evaluateCondition({ conditionConfig: decided }, {})).result).toBe(true);
    // conditionConfig may arrive as JSON text; rules win over condition.
    const text = JSON.stringify({ group: { logic: 'AND', rules: [rule('b', '>', 'a')] } });
    expect((await evaluateCondition({ condition: 'false', conditionConfig: text }, {})).result).toBe(true);
  });

  it('names the valid operators when one is unknown', async () => {
    const error = await nodeError(oneRule(1, 'equals', 1));
    expect(error.message).toMatch(/conditionConfig\.group\.rules\[0\]\.operator "equals" is not a Condition operator/);
    expect(error.message).toContain('== === != !== > >= < <= contains startsWith endsWith matchesRegex isEmpty isNotEmpty exists doesNotExist');
  });

  it('refuses a bad logic or an empty rule list', async () => {
    expect((await nodeError(evaluateCondition({ conditionConfig: { group: { logic: 'XOR', rules: [rule(1, '==', 1)] } } }, {}))).message).toMatch(
      /logic must be "AND" or "OR"/,
    );
    expect((await nodeError(evaluateCondition({ conditionConfig: { group: { logic: 'AND', rules: [] } } }, {}))).message).toMatch(/non-empty array/);
  });

  it('runs matchesRegex under a time limit and reports bad patterns', async () => {
    const started = Date.now();
    const slow = await nodeError(oneRule(`${'a'.repeat(40)}b`, 'matchesRegex', '^(a+)+$'));
    expect(slow.message).toMatch(/took longer than 1000 ms \(catastrophic backtracking\?\)/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect((await nodeError(oneRule('abc', 'matchesRegex', '(unclosed'))).message).toMatch(/is not a valid regular expression \(SyntaxError/);
    expect((await nodeError(oneRule('abc', 'matchesRegex', 5))).message).toMatch(/rightOperand must be a regular expression pattern/);
  });
});

describe('Condition: long operands', () => {
  // Sizes that took minutes when the numeric check backtracked; now a linear check, and past 400 characters text is not a number.
  it('compares a 200,000-digit operand that is not a number', async () => {
    expect(await oneRule(`${'1'.repeat(200_000)}x`, '==', '1')).toBe(false);
    expect(await oneRule('1'.repeat(200_000), '==', '1'.repeat(200_000))).toBe(true);
  });

  it('compares numeric strings of up to 400 characters as exact decimals, longer ones as text', async () => {
    expect(await oneRule(`1${'0'.repeat(399)}`, '>', '9'.repeat(399))).toBe(true);
    expect(await oneRule(`0.${'0'.repeat(397)}1`, '>', 0)).toBe(true);
    expect(await oneRule(`1${'0'.repeat(400)}`, '>', '9'.repeat(400))).toBe(false);
  });
});

describe('Condition: expressions', () => {
  it('evaluates JavaScript over bindings', async () => {
    expect((await evaluateCondition({ condition: '__t0 > 0.1' }, { __t0: 0.25 })).result).toBe(true);
    expect((await evaluateCondition({ condition: '__t0 > 0.1 && __t1 === "base"' }, { __t0: 0.25, __t1: 'mainnet' })).result).toBe(false);
    expect(
      (await evaluateCondition({ condition: '__t0.filter((t) => t.amount > 10).length === 2' }, { __t0: [{ amount: 11 }, { amount: 5 }, { amount: 12 }] }))
        .result,
    ).toBe(true);
    expect((await evaluateCondition({ condition: '__t0 // trailing comment' }, { __t0: 1 })).result).toBe(true);
  });

  it('coerces with JavaScript truthiness', async () => {
    const truth = async (condition: string) => (await evaluateCondition({ condition }, {})).result;
    expect(await truth('""')).toBe(false);
    expect(await truth('0')).toBe(false);
    expect(await truth('null')).toBe(false);
    expect(await truth('undefined')).toBe(false);
    expect(await truth('NaN')).toBe(false);
    expect(await truth('"false"')).toBe(true);
    expect(await truth('[]')).toBe(true);
    expect(await truth('({})')).toBe(true);
    expect(await truth('() => 0')).toBe(true);
    expect((await evaluateCondition({ condition: true }, {})).result).toBe(true);
  });

  it('treats binding strings as data', async () => {
    expect((await evaluateCondition({ condition: '__t0 === "\\"); process.exit(); (\\""' }, { __t0: '"); process.exit(); ("' })).result).toBe(true);
  });

  it('fails with a message an agent can act on', async () => {
    const missing = await nodeError(evaluateCondition({ condition: 'balance > 0.1' }, {}));
    expect(missing.message).toMatch(/^Condition expression threw ReferenceError: 'balance' is not defined\. Read upstream values with templates/);
    expect((await nodeError(evaluateCondition({ condition: '1 >' }, {}))).message).toMatch(/^Condition expression does not parse/);
    expect((await nodeError(evaluateCondition({ condition: 'while (true) {}' }, {}))).message).toMatch(/does not parse/);
    expect((await nodeError(evaluateCondition({ condition: '(() => { while (true) {} })()' }, {}))).message).toBe(
      'Condition expression exceeded its 1000 ms time limit.',
    );
    expect((await nodeError(evaluateCondition({}, {}))).message).toMatch(/needs a condition/);
  });

  it('conditionRunner returns the result for routing', async () => {
    expect(await conditionRunner({ condition: '__t0 > 1', __bindings: { __t0: 2 } }, ctx)).toEqual({ success: true, data: { result: true }, result: true });
    expect(await conditionRunner({ conditionConfig: { group: { logic: 'AND', rules: [rule('__t0', '<', 1)] } }, __bindings: { __t0: 2 } }, ctx)).toEqual({
      success: true,
      data: { result: false },
      result: false,
    });
  });
});

describe('code/run-code', () => {
  it('returns the value and captured logs', async () => {
    const out = await runCodeRunner({ code: 'console.log("n =", input.n);\nreturn { doubled: input.n * 2 };', input: { n: 21 } }, ctx);
    expect(out).toEqual({ success: true, data: { result: { doubled: 42 }, logs: ['n = 21'] }, result: { doubled: 42 }, logs: ['n = 21'] });
  });

  it('sees bindings as variables and in input, merged with config.input', async () => {
    const out = await runCodeRunner({ code: 'return [__t0, input.__t0, input.extra]', __bindings: { __t0: '0.5' }, input: '{"extra": true}' }, ctx);
    expect(out.result).toEqual(['0.5', '0.5', true]);
  });

  it('clamps the timeout and stops runaway code', async () => {
    const started = Date.now();
    const error = await nodeError(runCodeRunner({ code: 'while (true) {}', timeout: 50 }, ctx));
    expect(error.message).toBe('Code exceeded its 50 ms time limit');
    expect(error.details.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await nodeError(runCodeRunner({ code: 'while (true) {}', timeout: '0' }, ctx))).message).toBe('Code exceeded its 1 ms time limit');
    expect((await nodeError(runCodeRunner({ code: 'return 1', timeout: 'soon' }, ctx))).message).toMatch(/timeout must be a number of milliseconds/);
  });

  it('turns sandbox failures into node errors with the logs kept', async () => {
    const error = await nodeError(runCodeRunner({ code: 'console.log("step 1");\nthrow new Error("no price")' }, ctx));
    expect(error.message).toBe('Code threw Error: no price (line 2)');
    expect(error.details.logs).toEqual(['step 1']);
    // The longest time limit, so that on a loaded machine the memory limit is what stops it.
    expect((await nodeError(runCodeRunner({ code: 'let a = []; while (true) a.push(new Array(1e6))', timeout: 60_000 }, ctx))).message).toBe(
      'Code exceeded its memory limit of 32 MB',
    );
    expect((await nodeError(runCodeRunner({ code: '  ' }, ctx))).message).toMatch(/code must be a non-empty JavaScript function body/);
    expect((await nodeError(runCodeRunner({ code: 'return 1', input: [1] }, ctx))).message).toMatch(/input must be an object/);
  });
});

describe('math/aggregate', () => {
  const run = (config: Record<string, unknown>) => mathAggregateRunner(config, ctx);

  it('computes each operation', async () => {
    const values = [3, '1', 4, '1.5', 9];
    const results = Object.fromEntries(
      ['sum', 'average', 'min', 'max', 'count', 'median', 'product'].map((operation) => [operation, aggregate({ operation, values }).result]),
    );
    expect(results).toEqual({ sum: 18.5, average: 3.7, min: 1, max: 9, count: 5, median: 3, product: 162 });
    expect(aggregate({ operation: 'median', values: [4, 1, 3, 2] }).result).toBe(2.5);
    expect(aggregate({ operation: 'avg', values: [1, 2] }).result).toBe(1.5);
    expect(aggregate({ operation: 'MEAN', values: [1, 2, 4] }).result).toBe(2.3333333333333335);
    expect(await run({ operation: 'sum', values: [1, 2] })).toEqual({
      success: true,
      data: { result: 3, count: 2, operation: 'sum', decimal: '3' },
      result: 3,
    });
  });

  it('adds decimals exactly', async () => {
    expect(aggregate({ operation: 'sum', values: [0.1, 0.2] }).result).toBe(0.3);
    expect(aggregate({ operation: 'sum', values: ['0.1', '0.2', '0.3'] }).result).toBe(0.6);
    expect(aggregate({ operation: 'product', values: ['1.1', '1.1'] }).result).toBe(1.21);
    const wei = aggregate({ operation: 'sum', values: ['1000000000000000001', '2000000000000000002', '1e18'] });
    expect(wei.decimal).toBe('4000000000000000003');
    expect(aggregate({ operation: 'average', values: ['0.1', '0.2'] }).result).toBe(0.15);
  });

  it('accepts JSON array text, comma-separated text and a field path', async () => {
    expect(aggregate({ operation: 'sum', values: '[1, "2", 3.5]' }).result).toBe(6.5);
    expect(aggregate({ operation: 'max', values: '1, 7 ,3' }).result).toBe(7);
    const items = [{ token: { amount: '1.5' } }, { token: { amount: 2 } }];
    expect(aggregate({ operation: 'sum', values: items, field: 'token.amount' })).toMatchObject({ result: 3.5, count: 2 });
    expect(aggregate({ operation: 'sum', values: [{ a: [5, 6] }], field: 'a.1' }).result).toBe(6);
  });

  it('handles empty lists', async () => {
    expect(aggregate({ operation: 'count', values: [] })).toMatchObject({ result: 0, count: 0 });
    expect(aggregate({ operation: 'sum', values: '' })).toMatchObject({ result: 0, count: 0 });
    expect((await nodeError(run({ operation: 'average', values: [] }))).message).toBe('Cannot compute the average of an empty list.');
    expect((await nodeError(run({ operation: 'min', values: '[]' }))).message).toBe('Cannot compute the min of an empty list.');
  });

  it('names the index and value that is not a number', async () => {
    const error = await nodeError(run({ operation: 'sum', values: [1, 'abc', 3] }));
    expect(error.message).toBe('values[1] is not a number: received "abc".');
    expect(error.details).toMatchObject({ index: 1, received: 'abc' });
    expect((await nodeError(run({ operation: 'sum', values: [1, null] }))).message).toBe('values[1] is not a number: received null.');
    expect((await nodeError(run({ operation: 'sum', values: [true] }))).message).toBe('values[0] is not a number: received true.');
    expect((await nodeError(run({ operation: 'sum', values: [{ balance: 1 }] }))).message).toMatch(
      /values\[0\] is not a number: received \{"balance":1\}; set field/,
    );
    expect((await nodeError(run({ operation: 'sum', values: [{ balance: 'x' }], field: 'balance' }))).message).toBe(
      'values[0].balance is not a number: received "x".',
    );
    expect((await nodeError(run({ operation: 'sum', values: [{ other: 1 }], field: 'balance' }))).message).toMatch(/values\[0\] has no "balance"/);
    expect((await nodeError(run({ operation: 'sum', values: ['1e999'] }))).message).toMatch(/values\[0\] is not a number/);
    expect((await nodeError(run({ operation: 'product', values: ['1e300', '1e300'] }))).message).toMatch(
      /^The product \(1000.*601 digits\) is too large for a number\.$/,
    );
  });

  it('refuses numbers longer than 400 characters and exact results past 4000 digits', async () => {
    // Sizes that took minutes before these bounds (a 200,000-character fraction, products of thousands of 1e±400).
    const long = await nodeError(run({ operation: 'max', values: [`0.${'0'.repeat(200_000)}1`] }));
    expect(long.message).toMatch(/^values\[0\] is not a number: received "0\.0{70,}… \(200003 characters; a number has at most 400\)\.$/);
    expect((await nodeError(run({ operation: 'product', values: Array(1000).fill('1e-400') }))).message).toBe(
      'The product exceeds 4000 digits at values[10]: exact results are limited to 4000 integer digits or decimal places.',
    );
    expect((await nodeError(run({ operation: 'product', values: Array(20_000).fill('1e400') }))).message).toBe(
      'The product exceeds 4000 digits at values[9]: exact results are limited to 4000 integer digits or decimal places.',
    );
    // Within the bounds results stay exact, trailing zeros dropped.
    expect(aggregate({ operation: 'sum', values: [`1.${'0'.repeat(398)}`, '0.5'] }).decimal).toBe('1.5');
    expect(aggregate({ operation: 'product', values: Array(9).fill('1e-400') }).decimal).toBe(`0.${'0'.repeat(3599)}1`);
  });

  it('refuses unknown operations and unusable values', async () => {
    expect((await nodeError(run({ operation: 'variance', values: [1] }))).message).toMatch(/operation "variance" is not supported; use one of sum, average/);
    expect((await nodeError(run({ operation: 'sum' }))).message).toMatch(/values is required/);
    expect((await nodeError(run({ operation: 'sum', values: '[1,' }))).message).toMatch(/values looks like a JSON array but does not parse/);
    expect((await nodeError(run({ operation: 'sum', values: { a: 1 } }))).message).toMatch(/values must be an array/);
  });
});
