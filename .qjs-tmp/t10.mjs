import { getQuickJS } from 'quickjs-emscripten';
const Q = await getQuickJS();
const ctx = Q.newContext();
const r = ctx.evalCode('Object.getOwnPropertyNames(globalThis).join(" ")');
console.log(ctx.dump(r.value)); r.value.dispose();
const r2 = ctx.evalCode('[typeof import.meta, 1]'); console.log(ctx.dump(r2.value ?? r2.error)); (r2.value ?? r2.error).dispose();
const r3 = ctx.evalCode('import("fs").then(x=>1, e=>String(e))'); console.log(ctx.dump(r3.value ?? r3.error)); ctx.runtime.executePendingJobs(); const st = ctx.getPromiseState(r3.value); console.log(st.type, st.value && ctx.dump(st.value)); st.value?.dispose(); r3.value.dispose();
ctx.dispose();
