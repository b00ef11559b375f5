import { describe, expect, it } from 'vitest';
import { evaluateSimpleCondition, UNSUPPORTED } from '../src/sandbox/simple-expression.ts';
import { evaluateExpression } from '../src/sandbox/quickjs.ts';

/** The fast path must agree with JavaScript in the sandbox wherever it answers at all. */
const bindings = { __t0: 5, __t1: '5', __t2: 'ok', __t3: null, __t4: true, __t5: 0, __t6: '', __t7: 'abc' };

const expressions = [
  '__t0 > 3',
  '__t0 >= 5 && __t2 === "ok"',
  '__t0 == __t1',
  '__t0 === __t1',
  '__t0 != "5"',
  '!__t4 || __t5',
  '__t3 == undefined',
  '__t3 === null',
  '__t6 || __t7',
  '__t7 < "abd"',
  '-__t0 < 0',
  '(__t0 > 10) || (__t2 !== "ok") || __t5',
  'true && 1 && "x"',
  '__t1 > 4',
];

describe('simple Condition expressions', () => {
  it.each(expressions)('%s agrees with the sandbox', async (expression) => {
    const fast = evaluateSimpleCondition(expression, bindings);
    expect(fast).not.toBe(UNSUPPORTED);
    expect(fast).toBe((await evaluateExpression(`!!(${expression})`, bindings)) === true);
  });

  it.each(['__t7.length > 2', 'Math.max(__t0, 1) > 2', '[1].includes(__t0)', 'this.constructor', 'unknownName > 1', '__t0 + 1 > 2', '(() => true)()'])(
    'leaves %s to the sandbox',
    (expression) => {
      expect(evaluateSimpleCondition(expression, bindings)).toBe(UNSUPPORTED);
    },
  );
});
