import { getQuickJS, shouldInterruptAfterDeadline } from 'quickjs-emscripten';
const Q = await getQuickJS();
function run(code, ms = 1000) {
  const rt = Q.newRuntime();
  rt.setMemoryLimit(32 * 1024 * 1024);
  rt.setMaxStackSize(256*1024);
  rt.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + ms));
  const ctx = rt.newContext();
  const t = Date.now();
  const r = ctx.evalCode(code);
  let out;
  if (r.error) { out = ['ERR', ctx.dump(r.error)]; r.error.dispose(); } else { out = ['OK', ctx.dump(r.value)]; r.value.dispose(); }
  ctx.dispose(); rt.dispose();
  console.log(Date.now() - t, 'ms', JSON.stringify(out).slice(0, 300));
}
run('/(a+)+$/.test("a".repeat(28)+"b")');
run('typeof setTimeout + typeof require + typeof process + typeof console + typeof Function("return globalThis")()');
run('Object.getOwnPropertyNames(globalThis).join()');
run('try { while(true){} } catch(e) { "caught " + e }');
run('let a=[]; while(true) a.push(new Array(1e6).fill(1))');
run('[].constructor(1e8).indexOf(1)', 1000);
let t = Date.now();
for (let i = 0; i < 1000; i++) { const rt = Q.newRuntime(); const ctx = rt.newContext(); ctx.evalCode('1+1').value.dispose(); ctx.dispose(); rt.dispose(); }
console.log('1000 ctx', Date.now() - t, 'ms', process.memoryUsage().rss / 1e6);
