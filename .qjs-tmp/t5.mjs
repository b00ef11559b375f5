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
  console.log(code.slice(0,60), Date.now() - t, 'ms', JSON.stringify(out).slice(0, 60), 'rss', Math.round(process.memoryUsage().rss / 1e6));
}
for (const n of [1, 2, 4, 8, 16, 24]) run(`let a=[]; for (let i=0;i<${n};i++) a.push("x".repeat(1e6)+i); a.length`);
run('"x".repeat(1e6).length'); run('("x".repeat(1e6)+"y").length');
run('let s = "x".repeat(1e6); let t = s + "y"; t.length');
