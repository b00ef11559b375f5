import { loadModule } from '../src/sandbox/evaluate.ts';
import { PRELUDE_SOURCE } from '../src/sandbox/prelude.ts';
const m = await loadModule(32 * 1024 * 1024);
const N = 1000;
const acc: Record<string, number> = {};
const lap = (k: string, t: number) => { acc[k] = (acc[k] ?? 0) + performance.now() - t; return performance.now(); };
for (let i = 0; i < N; i++) {
  let t = performance.now();
  const rt = m.newRuntime(); rt.setMemoryLimit(32e6); rt.setMaxStackSize(512*1024); let dl = Infinity; rt.setInterruptHandler(() => Date.now() > dl);
  const c = rt.newContext();
  t = lap('rt+ctx', t);
  const f1 = c.newFunction('log', () => {}); const f2 = c.newFunction('fail', () => {});
  t = lap('newFunction', t);
  const p = c.unwrapResult(c.evalCode(PRELUDE_SOURCE, 'p.js'));
  t = lap('prelude compile', t);
  const run = c.unwrapResult(c.callFunction(p, c.undefined, f1, f2));
  t = lap('prelude run', t);
  const args = ['expression', '__t0 > 0.1', '["__t0"]', '[5]'].map(s => c.newString(s));
  dl = Date.now() + 1000;
  const r = c.callFunction(run, c.undefined, ...args);
  t = lap('run', t);
  const v = c.unwrapResult(r); c.getString(v); v.dispose();
  for (const h of [...args, run, p, f2, f1]) h.dispose();
  c.dispose(); rt.dispose();
  t = lap('dispose', t);
}
for (const [k, v] of Object.entries(acc)) console.log(k, (v / N).toFixed(3));
