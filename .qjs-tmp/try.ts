import { evaluateExpression, runUserCode, closeSandbox } from '../src/sandbox/quickjs.ts';
const t0 = performance.now();
console.log(await evaluateExpression('__t0 + 1', { __t0: 41 }), 'first', performance.now() - t0);
const tries: [string, () => Promise<unknown>][] = [
  ['loop', () => runUserCode('while(true){}', null)],
  ['mem', () => runUserCode('let a=[]; while(true) a.push(new Array(1e6).fill(1))', null)],
  ['mem2', () => runUserCode('let a=[]; while(true) a.push(new Array(1e6))', null)],
  ['rec', () => runUserCode('function f(){return f()+1}; return f()', null)],
  ['parens', () => runUserCode('return eval("(".repeat(100000))', null)],
  ['indexOf', () => runUserCode('return [].constructor(2**32-1).indexOf(1)', null)],
  ['big', () => runUserCode('return "x".repeat(2e6)', null)],
  ['throw', () => runUserCode('const a = 1;\nnull.x', null)],
  ['syntax', () => runUserCode('const a = ;', null)],
  ['log', () => runUserCode('console.log("hi", {a:1}, [1,2]); console.error("bad"); return input.x * 2', { x: 21 })],
  ['fn', () => runUserCode('return {f(){}}', null)],
  ['bigint', () => runUserCode('return 1n', null)],
  ['promise', () => runUserCode('return import("fs")', null)],
  ['undef', () => runUserCode('1', null)],
  ['proc', () => evaluateExpression('this.constructor.constructor("return process")()', {})],
  ['ok after', () => evaluateExpression('[1,2,3].map(x => x * __t0)', { __t0: 2 })],
];
for (const [name, fn] of tries) {
  const t = performance.now();
  try { console.log(name, 'OK', JSON.stringify(await fn()).slice(0, 200), Math.round(performance.now() - t)); }
  catch (e: any) { console.log(name, 'ERR', e.kind, e.message, Math.round(performance.now() - t)); }
}
let t = performance.now();
for (let i = 0; i < 1000; i++) await evaluateExpression('__t0 > 0.1', { __t0: i });
console.log('1000 evals', performance.now() - t, process.memoryUsage().rss / 1e6);
t = performance.now();
await Promise.all(Array.from({ length: 1000 }, (_, i) => evaluateExpression('__t0 > 0.1', { __t0: i })));
console.log('1000 parallel evals', performance.now() - t, process.memoryUsage().rss / 1e6);
await closeSandbox();
