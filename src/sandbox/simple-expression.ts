import jsep from 'jsep';

/**
 * Most Condition expressions are comparisons of template values with
 * literals (`__t0 > 3 && __t1 === "ok"`). Those are parsed (jsep) and
 * interpreted here over a closed set of node types — no code runs, nothing
 * of the host is reachable — which is several times cheaper than a trip to
 * the QuickJS sandbox. Anything outside the subset returns UNSUPPORTED and
 * goes to the sandbox, so semantics stay JavaScript's either way.
 */

export const UNSUPPORTED = Symbol('unsupported');
type Value = unknown;

const MAX_LENGTH = 2_000;
const MAX_DEPTH = 50;

/** Only JSON-like values (what bindings hold) are compared here; objects go to the sandbox. */
const primitive = (v: Value) => v === null || ['string', 'number', 'boolean', 'undefined'].includes(typeof v);

function evaluate(node: jsep.Expression, bindings: Readonly<Record<string, Value>>, depth: number): Value | typeof UNSUPPORTED {
  if (depth > MAX_DEPTH) return UNSUPPORTED;
  switch (node.type) {
    case 'Literal':
      return primitive((node as jsep.Literal).value) ? (node as jsep.Literal).value : UNSUPPORTED;
    case 'Identifier': {
      const name = (node as jsep.Identifier).name;
      if (name === 'undefined') return undefined;
      if (!Object.prototype.hasOwnProperty.call(bindings, name)) return UNSUPPORTED;
      const value = bindings[name];
      return primitive(value) ? value : UNSUPPORTED;
    }
    case 'UnaryExpression': {
      const { operator, argument } = node as jsep.UnaryExpression;
      const v = evaluate(argument, bindings, depth + 1);
      if (v === UNSUPPORTED) return UNSUPPORTED;
      if (operator === '!') return !v;
      if (operator === '-' && typeof v === 'number') return -v;
      return UNSUPPORTED;
    }
    case 'BinaryExpression': {
      const { operator, left, right } = node as jsep.BinaryExpression;
      const l = evaluate(left, bindings, depth + 1);
      if (l === UNSUPPORTED) return UNSUPPORTED;
      // Short-circuit exactly like JavaScript.
      if (operator === '&&') return l ? evaluate(right, bindings, depth + 1) : l;
      if (operator === '||') return l ? l : evaluate(right, bindings, depth + 1);
      const r = evaluate(right, bindings, depth + 1);
      if (r === UNSUPPORTED) return UNSUPPORTED;
      const a = l as string | number | boolean | null | undefined;
      const b = r as string | number | boolean | null | undefined;
      switch (operator) {
        case '===':
          return a === b;
        case '!==':
          return a !== b;
        case '==':
          // eslint-disable-next-line eqeqeq
          return a == b;
        case '!=':
          // eslint-disable-next-line eqeqeq
          return a != b;
        case '>':
          return (a as number) > (b as number);
        case '>=':
          return (a as number) >= (b as number);
        case '<':
          return (a as number) < (b as number);
        case '<=':
          return (a as number) <= (b as number);
        default:
          return UNSUPPORTED;
      }
    }
    default:
      return UNSUPPORTED;
  }
}

/** The expression's truthiness, or UNSUPPORTED when it needs the full sandbox. */
export function evaluateSimpleCondition(expression: string, bindings: Readonly<Record<string, Value>>): boolean | typeof UNSUPPORTED {
  if (expression.length > MAX_LENGTH) return UNSUPPORTED;
  let ast: jsep.Expression;
  try {
    ast = jsep(expression);
  } catch {
    return UNSUPPORTED; // let the sandbox produce the syntax error message
  }
  const value = evaluate(ast, bindings, 0);
  return value === UNSUPPORTED ? UNSUPPORTED : Boolean(value);
}
