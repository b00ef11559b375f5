import { loadModule } from '../src/sandbox/evaluate.ts';
import { PRELUDE_SOURCE } from '../src/sandbox/prelude.ts';
const m = await loadModule(32 * 1024 * 1024);
const N = 500;
function bench(name: string, src: string, opts?: any) {
  let total = 0;
  for (let i = 0; i < N; i++) {
    const rt = m.newRuntime(); const c = rt.newContext();
    const t = performance.now();
    const r = c.evalCode(src, 'p.js', opts); total += performance.now() - t;
    (r.value ?? r.error)!.dispose(); c.dispose(); rt.dispose();
  }
  console.log(name, (total / N).toFixed(3));
}
bench('prelude', PRELUDE_SOURCE);
bench('prelude strip', PRELUDE_SOURCE, { strip: true });
bench('prelude strict', PRELUDE_SOURCE, { strict: true });
const min = PRELUDE_SOURCE.replace(/\n\s*/g, '\n');
bench('prelude nowhitespace', min);
bench('tiny', '(function(){return 1})');
bench('half', PRELUDE_SOURCE.slice(0, PRELUDE_SOURCE.indexOf('return function run')) + '})');
bench('JSON.parse 3k', 'JSON.parse(' + JSON.stringify(JSON.stringify({a: 'x'.repeat(3000)})) + ')');
