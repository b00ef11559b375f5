import { evaluateExpression, runUserCode, closeSandbox } from '../src/sandbox/quickjs.ts';
const tries: [string, () => Promise<unknown>][] = [
  ['str', () => runUserCode("let s = 'x'; const keep = []; while (true) { s = s + s; keep.push(s + '.'); }", null)],
  ['u8', () => runUserCode('const keep = []; while (true) keep.push(new Uint8Array(1 << 20))', null)],
  ['16', () => runUserCode('const a = new Uint8Array(16 * 1024 * 1024); a[5] = 7; return a[5]', null)],
  ['16in8', () => runUserCode('const a = new Uint8Array(16 * 1024 * 1024); a[5] = 7; return a[5]', null, { memoryBytes: 8 * 1024 * 1024 })],
  ['rec', () => runUserCode('function f() { return f() + 1 } return f()', null)],
  ['parens', () => runUserCode("return eval('('.repeat(100000))", null)],
  ['nested', () => runUserCode("let o = []; for (let i = 0; i < 100000; i++) o = [o]; return JSON.stringify(o).length", null)],
];
for (const [name, fn] of tries) {
  const t = performance.now();
  try { console.log(name, 'OK', JSON.stringify(await fn()).slice(0, 200), Math.round(performance.now() - t)); }
  catch (e: any) { console.log(name, 'ERR', e.kind, e.message, Math.round(performance.now() - t)); }
}
await closeSandbox();
