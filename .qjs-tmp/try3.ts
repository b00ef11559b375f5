import { runUserCode, closeSandbox } from '../src/sandbox/quickjs.ts';
const tries: [string, () => Promise<unknown>][] = [
  ['str1', () => runUserCode("const keep = []; while (true) keep.push('x'.repeat(1e6) + Math.random())", null)],
  ['str2', () => runUserCode("let s = 'x'; while (true) s = s + s.split('').join('')", null)],
  ['obj', () => runUserCode("const keep = []; for (let i = 0; ; i++) keep.push({ i, s: 'k' + i })", null)],
  ['map', () => runUserCode("const m = new Map(); for (let i = 0; ; i++) m.set(i, [i])", null)],
];
for (const [name, fn] of tries) {
  const t = performance.now();
  try { console.log(name, 'OK', JSON.stringify(await fn()).slice(0, 200), Math.round(performance.now() - t)); }
  catch (e: any) { console.log(name, 'ERR', e.kind, e.message, Math.round(performance.now() - t)); }
}
await closeSandbox();
