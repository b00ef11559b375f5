import { afterAll, describe, expect, it } from 'vitest';
import { closeSandbox, evaluateExpression, runUserCode, SandboxError, type SandboxErrorKind } from '../src/sandbox/quickjs.ts';

/** Memory-limit tests allow this long, so only the memory limit can stop them (allocation is slow on a loaded machine). */
const MEMORY_TEST_TIMEOUT_MS = 15_000;

/** DESIGN.md Engine: untrusted code runs in QuickJS (WebAssembly) with time, memory and stack limits, and reaches nothing of the host. */

afterAll(() => closeSandbox());

/** The SandboxError a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SandboxError);
    return error as SandboxError;
  }
  throw new Error('expected the sandbox to refuse the code');
}

async function expectFailure(promise: Promise<unknown>, kind: SandboxErrorKind, message: RegExp): Promise<void> {
  const error = await failure(promise);
  expect(error.kind).toBe(kind);
  expect(error.message).toMatch(message);
}

describe('evaluateExpression', () => {
  it('evaluates an expression with bindings as variables', async () => {
    expect(await evaluateExpression('__t0 > 0.1 && input.ok', { __t0: 0.5, input: { ok: true } })).toBe(true);
    expect(await evaluateExpression('[__t0, __t1].map((x) => x * 2)', { __t0: 2, __t1: 3 })).toEqual([4, 6]);
    expect(await evaluateExpression('({ a: __t0.nested[1] })', { __t0: { nested: ['x', 'y'] } })).toEqual({ a: 'y' });
    expect(await evaluateExpression('undefined', {})).toBeUndefined();
  });

  it('treats binding values as data, never as code', async () => {
    const tricky = ['"); process.exit(); ("', "'); throw 1; ('", '`${process.exit()}`', '*/ process.exit() /*', '\u2028\u2029', '</script>'];
    for (const value of tricky) {
      expect(await evaluateExpression('__t0', { __t0: value })).toBe(value);
      expect(await evaluateExpression('__t0.length', { __t0: value })).toBe(value.length);
    }
    expect(await evaluateExpression('__t0', { __t0: { '"); x': ['");'] } })).toEqual({ '"); x': ['");'] });
  });

  it('refuses binding names that are not variable names', async () => {
    await expectFailure(evaluateExpression('1', { 'a-b': 1 }), 'syntax', /not a valid JavaScript variable name/);
    await expectFailure(evaluateExpression('1', { 'x = process': 1 }), 'syntax', /not a valid JavaScript variable name/);
    await expectFailure(evaluateExpression('1', { class: 1 }), 'syntax', /not a valid JavaScript variable name/);
  });

  it('reports syntax and runtime errors apart', async () => {
    await expectFailure(evaluateExpression('1 +', {}), 'syntax', /^Expression does not parse: SyntaxError/);
    await expectFailure(evaluateExpression('missing + 1', {}), 'runtime', /^Expression threw ReferenceError: 'missing' is not defined/);
    // A SyntaxError thrown while running (JSON.parse) is a runtime error of the code, not a parse error.
    await expectFailure(evaluateExpression('JSON.parse("{")', {}), 'runtime', /threw SyntaxError/);
  });
});

describe('sandbox escapes are contained', () => {
  it('cannot reach process through constructors', async () => {
    await expectFailure(evaluateExpression("this.constructor.constructor('return process')()", {}), 'runtime', /'process' is not defined/);
    await expectFailure(runUserCode("return this.constructor.constructor('return process')()", null), 'runtime', /'process' is not defined/);
    await expectFailure(evaluateExpression("({}).constructor.constructor('return process')()", {}), 'runtime', /'process' is not defined/);
    expect(await evaluateExpression('(function(){ return this })().process', {})).toBeUndefined();
    expect(await evaluateExpression('globalThis.require', {})).toBeUndefined();
  });

  it("Function('return globalThis')() is the sandbox's own global, with standard built-ins only", async () => {
    const names = (await evaluateExpression("Object.getOwnPropertyNames(Function('return globalThis')())", {})) as string[];
    expect(names).toEqual(expect.arrayContaining(['Object', 'JSON', 'Math', 'Array', 'console']));
    for (const host of [
      'process',
      'require',
      'module',
      'Buffer',
      'setTimeout',
      'setInterval',
      'setImmediate',
      'queueMicrotask',
      'fetch',
      'XMLHttpRequest',
      'WebSocket',
      'std',
      'os',
      'global',
    ]) {
      expect(names).not.toContain(host);
    }
    const types = await evaluateExpression(
      '[typeof require, typeof process, typeof setTimeout, typeof setInterval, typeof fetch, typeof module, typeof Buffer, typeof std, typeof os]',
      {},
    );
    expect(types).toEqual(Array(9).fill('undefined'));
  });

  it('has no module loading: import() never yields a module and static imports do not parse', async () => {
    await expectFailure(evaluateExpression("import('fs')", {}), 'result', /Promise/);
    await expectFailure(runUserCode("return import('node:child_process')", null), 'result', /Promise/);
    await expectFailure(runUserCode("import fs from 'fs'; return 1", null), 'syntax', /does not parse/);
    await expectFailure(runUserCode("return require('fs')", null), 'runtime', /'require' is not defined/);
  });

  it('prototype pollution inside stays inside, and does not outlive the evaluation', async () => {
    const { result } = await runUserCode('Object.prototype.polluted = 1; Array.prototype.map = null; JSON.stringify = () => "{}"; return ({}).polluted', null);
    expect(result).toBe(1);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
    expect(typeof [].map).toBe('function');
    // The next evaluation gets a fresh context.
    expect(await evaluateExpression('({}).polluted', {})).toBeUndefined();
    expect(await evaluateExpression('[1].map((x) => x + 1)', {})).toEqual([2]);
  });

  it('stops an infinite loop at its time limit, without blocking the gateway', async () => {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    const started = Date.now();
    const error = await failure(runUserCode('while (true) {}', null));
    const elapsed = Date.now() - started;
    clearInterval(ticker);
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe('Code exceeded its 1000 ms time limit');
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(2000);
    // The host's event loop kept running while the sandbox spun.
    expect(ticks).toBeGreaterThan(20);
  });

  it('honours a shorter time limit, and catch cannot swallow the interrupt', async () => {
    const started = Date.now();
    await expectFailure(runUserCode('for (;;) { try { while (true) {} } catch (e) {} }', null, { timeoutMs: 100 }), 'timeout', /100 ms time limit/);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('kills code stuck in a native built-in that never checks the deadline', async () => {
    const started = Date.now();
    await expectFailure(runUserCode('return [].constructor(2 ** 32 - 1).indexOf(1)', null, { timeoutMs: 200 }), 'timeout', /200 ms time limit/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await evaluateExpression('6 * 7', {})).toBe(42);
  });

  it('stops unbounded allocation at the memory limit', async () => {
    // A generous time limit, so a loaded machine still reaches the memory limit first.
    const slow = { timeoutMs: MEMORY_TEST_TIMEOUT_MS };
    await expectFailure(runUserCode('let a = []; while (true) a.push(new Array(1e6))', null, slow), 'memory', /^Code exceeded its memory limit of 32 MB$/);
    await expectFailure(runUserCode("const keep = []; while (true) keep.push('x'.repeat(1e6) + Math.random())", null, slow), 'memory', /memory limit/);
    await expectFailure(runUserCode('const keep = []; for (let i = 0; ; i++) keep.push({ i, s: "k" + i })', null, slow), 'memory', /memory limit/);
    await expectFailure(runUserCode('const keep = []; while (true) keep.push(new Uint8Array(1 << 20))', null, slow), 'memory', /memory limit/);
    // The limit is real: 16 MB fits in 32 MB but not in 8 MB.
    const sixteen = 'const a = new Uint8Array(16 * 1024 * 1024); a[5] = 7; return a[5]';
    expect((await runUserCode(sixteen, null, slow)).result).toBe(7);
    await expectFailure(runUserCode(sixteen, null, { ...slow, memoryBytes: 8 * 1024 * 1024 }), 'memory', /memory limit of 8 MB/);
  });

  it('stops deep recursion and deeply nested source at the stack limit', async () => {
    await expectFailure(runUserCode('function f() { return f() + 1 } return f()', null), 'memory', /stack limit/);
    await expectFailure(runUserCode("return eval('('.repeat(100000))", null), 'memory', /stack limit/);
    await expectFailure(runUserCode("return JSON.parse('['.repeat(100000))", null), 'memory', /stack limit/);
    // Moderate recursion is fine.
    expect((await runUserCode('const f = (n) => (n === 0 ? 0 : 1 + f(n - 1)); return f(1000)', null)).result).toBe(1000);
  });

  it('refuses results that are too large or not JSON', async () => {
    await expectFailure(runUserCode("return 'x'.repeat(2e6)", null), 'result', /too large.*over the limit of 1048576/);
    await expectFailure(runUserCode('return { f() {} }', null), 'result', /property "f" is a function/);
    await expectFailure(runUserCode('return 10n', null), 'result', /BigInt/);
    await expectFailure(runUserCode('const a = {}; a.self = a; return a', null), 'result', /not JSON-serializable/);
    await expectFailure(runUserCode('return Symbol("s")', null), 'result', /symbol/);
    expect((await runUserCode("return 'x'.repeat(1000)", null)).result).toHaveLength(1000);
  });

  it('keeps working after every kind of failure', async () => {
    const results = await Promise.all([1, 2, 3].map((n) => evaluateExpression('__t0 * 2', { __t0: n })));
    expect(results).toEqual([2, 4, 6]);
  });
});

describe('runUserCode', () => {
  it('runs a function body over input and returns its value and logs', async () => {
    const { result, logs } = await runUserCode(
      'console.log("total", input.items.length, { first: input.items[0] });\nconsole.warn("careful");\nreturn input.items.reduce((a, b) => a + b, 0);',
      { items: [1, 2, 3] },
    );
    expect(result).toBe(6);
    expect(logs).toEqual(['total 3 {"first":1}', '[warn] careful']);
  });

  it('exposes extra bindings as variables next to input', async () => {
    const { result } = await runUserCode(
      'return { balance: Number(__t0), low: Number(__t0) < 0.05, from: input.who }',
      { who: 'me' },
      { bindings: { __t0: '0.01' } },
    );
    expect(result).toEqual({ balance: 0.01, low: true, from: 'me' });
  });

  it('bounds the captured logs', async () => {
    const { logs } = await runUserCode('for (let i = 0; i < 250; i++) console.log(i); console.log("x".repeat(5000)); return true', null);
    expect(logs).toHaveLength(101);
    expect(logs[0]).toBe('0');
    expect(logs[100]).toMatch(/151 more log line\(s\) dropped/);
    const long = await runUserCode('console.log("y".repeat(5000)); return 1', null);
    expect(long.logs[0]).toMatch(/^y{2000}… \(3000 more characters\)$/);
  });

  it('asks for a return value, and names the line of a runtime error', async () => {
    await expectFailure(runUserCode('const x = 1;', null), 'result', /return <value>/);
    const error = await failure(runUserCode('const a = 1;\nconsole.log("before");\nreturn a.b.c;', null));
    expect(error.kind).toBe('runtime');
    expect(error.message).toMatch(/^Code threw TypeError: .*\(line 3\)$/);
    expect(error.logs).toEqual(['before']);
    await expectFailure(runUserCode('throw "plain"', null), 'runtime', /a non-Error value was thrown: plain/);
    const nested = await failure(
      runUserCode('function check(x) {\n  if (x > 1) {\n    throw new RangeError("too big");\n  }\n}\ncheck(1);\ncheck(2);\nreturn 1;', null),
    );
    expect(nested.message).toBe('Code threw RangeError: too big (line 3)');
  });

  it('runs 1,000 evaluations quickly and without memory growth', async () => {
    await evaluateExpression('true', {});
    const rssBefore = process.memoryUsage().rss;
    const started = Date.now();
    for (let i = 0; i < 1000; i++) {
      expect(await evaluateExpression('__t0 % 7 === 0', { __t0: i })).toBe(i % 7 === 0);
    }
    const elapsed = Date.now() - started;
    const growth = process.memoryUsage().rss - rssBefore;
    expect(elapsed).toBeLessThan(15_000);
    expect(growth).toBeLessThan(150 * 1024 * 1024);
  });
});
