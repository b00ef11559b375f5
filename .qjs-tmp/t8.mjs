import { getQuickJS, shouldInterruptAfterDeadline } from 'quickjs-emscripten';
const Q = await getQuickJS();
function run(code, ms = 30000) {
  const rt = Q.newRuntime();
  rt.setMemoryLimit(32 * 1024 * 1024);
  rt.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + ms));
  const ctx = rt.newContext();
  const t = Date.now();
  const r = ctx.evalCode(code);
  let out;
  if (r.error) { out = ['ERR', ctx.dump(r.error)]; r.error.dispose(); } else { out = ['OK', ctx.dump(r.value)]; r.value.dispose(); }
  console.log(rt.dumpMemoryUsage());
  ctx.dispose(); rt.dispose();
  console.log(code.slice(0,70), Date.now() - t, 'ms', JSON.stringify(out).slice(0, 300), 'rss', Math.round(process.memoryUsage().rss / 1e6), Q.getWasmMemory?.().buffer.byteLength/1e6);
}
run(process.argv[2]);
