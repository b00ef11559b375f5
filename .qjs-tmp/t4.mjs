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
  console.log(Date.now() - t, 'ms', JSON.stringify(out).slice(0, 100), 'rss', Math.round(process.memoryUsage().rss / 1e6));
}
run('1');
run('let a=[]; while(true) a.push(new Array(1e6).fill(1))');
run('let a=[]; while(true) a.push(Array.from({length:1e5},()=>1))');
run('let a=[]; while(true) a.push("x".repeat(1e6) + Math.random())');
run('let a=[]; for(;;) a.push([1,2,3,4,5,6,7,8])');
run('let a=[]; for(;;) a.push({a:1})');
