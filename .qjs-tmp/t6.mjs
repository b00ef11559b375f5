import { getQuickJS, shouldInterruptAfterDeadline } from 'quickjs-emscripten';
const Q = await getQuickJS();
function run(code, ms = 20000) {
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
  console.log(code.slice(0,70), Date.now() - t, 'ms', JSON.stringify(out).slice(0, 60), 'rss', Math.round(process.memoryUsage().rss / 1e6));
}
run(`let a=[]; let t=Date.now(); try { for (let i=0;i<40;i++) a.push("x".repeat(1e6)+i); } catch(e) { } ; [a.length, Date.now()-t]`);
run(`"x".repeat(40e6).length`);
run(`"x".repeat(20e6).length`);
run(`"x".repeat(30e6).length`);
