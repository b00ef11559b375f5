import { getQuickJS } from 'quickjs-emscripten';
const Q = await getQuickJS(); const c = Q.newContext();
const r = c.evalCode('try { Function("input", "const a = 1;\\nreturn a.b.c;")() } catch (e) { e.stack }');
console.log(JSON.stringify(c.dump(r.value))); r.value.dispose(); c.dispose();
