import { describe, expect, it } from 'vitest';
import { bindTemplates, resolveValue, type ResolveScope } from '../src/engine/resolve.ts';
import { evaluateExpression } from '../src/sandbox/quickjs.ts';

const scope: ResolveScope = {
  outputs: new Map<string, unknown>([['t', { success: true, data: { amount: 5, name: 'O"Brien', items: [{ v: 1 }, { v: 2 }] } }]]),
  labelOf: (id) => (id === 't' ? 'Start' : undefined),
  now: new Date('2026-01-01T00:00:00Z'),
};

describe('template resolution', () => {
  it('keeps the type of a whole-field template, interpolates text, and walks nested paths and indexes', () => {
    expect(
      resolveValue({ a: '{{@t:Start.amount}}', b: 'n={{@t:Start.amount}}', c: '{{@t:Start.items[1].v}}', d: '{{@__system:System.unixTimestamp}}' }, scope),
    ).toEqual({
      a: 5,
      b: 'n=5',
      c: 2,
      d: 1767225600,
    });
  });

  it('binds templates in code as variables, including inside string and template literals', async () => {
    const bound = bindTemplates(
      '`${"name: {{@t:Start.name}}"} / ${Number("{{@t:Start.amount}}") * 2} / total {{@t:Start.amount}}` + {{@t:Start.amount}}',
      scope,
    );
    expect(bound.source).not.toContain('{{@');
    expect(Object.values(bound.bindings)).toEqual(['O"Brien', 5]);
    expect(await evaluateExpression(bound.source, bound.bindings)).toBe('name: O"Brien / 10 / total 55');
  });

  it('leaves string literals without templates alone, so quoted object keys still parse', async () => {
    const bound = bindTemplates('const m = {"a": "x", \'b\': "{{@t:Start.name}}"}; return m', scope);
    expect(bound.source).toContain('{"a": "x", \'b\': ');
    expect(await evaluateExpression(`(() => { ${bound.source} })()`, bound.bindings)).toEqual({ a: 'x', b: 'O"Brien' });
  });

  it('names the template and the available fields when a path is missing', () => {
    expect(() => resolveValue('{{@t:Start.nope}}', scope)).toThrow(/\{\{@t:Start\.nope\}\}.*Available fields: amount, name, items/);
    expect(() => resolveValue('{{@ghost:Ghost.x}}', scope)).toThrow(/has not run/);
  });
});
