import { parentPort, workerData } from 'node:worker_threads';
import { newQuickJSWASMModule, newVariant, RELEASE_SYNC, shouldInterruptAfterDeadline } from 'quickjs-emscripten';
const mem = new WebAssembly.Memory({ initial: 256, maximum: 256 + 512 });
const Q = await newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmMemory: mem }));
const s = workerData.stack;
const out = [];
function run(code) {
  const rt = Q.newRuntime(); rt.setMaxStackSize(s); rt.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + 2000));
  const ctx = rt.newContext();
  try { const r = ctx.evalCode(code); out.push(JSON.stringify(ctx.dump(r.value ?? r.error)).slice(0, 100)); r.value?.dispose(); r.error?.dispose(); ctx.dispose(); rt.dispose(); }
  catch (e) { out.push('HOST ' + e); }
}
run('let d=0; function f(){d++; return f()+1}; try { f() } catch(e) { d + " " + e }');
run('let d=0; const o = {get x(){ d++; return this.x }}; try { o.x } catch(e) { d + " " + e }');
run('let d=0; function g(a){ d++; return [1].map(()=>g(a))}; try { g() } catch(e) { d + " " + e }');
run('let s="["; for (let i=0;i<100000;i++) s+="["; try { JSON.parse(s) } catch(e) { String(e) }');
run('let o=[]; for (let i=0;i<100000;i++) o=[o]; try { JSON.stringify(o).length } catch(e) { String(e) }');
run('let d=0; function f(){d++; return new Proxy({}, {get(){return f()}}).x}; try { f() } catch(e) { d + " " + e }');
run('let s=""; for (let i=0;i<100000;i++) s+="("; try { eval(s) } catch(e) { String(e) }');
run('let s=""; for (let i=0;i<100000;i++) s+="{a:"; try { eval("("+s) } catch(e) { String(e) }');
run('let s=""; for (let i=0;i<100000;i++) s+="(?:"; try { new RegExp(s) } catch(e) { String(e) }');
run('let s=""; for (let i=0;i<100000;i++) s+="a"; for (let i=0;i<3000;i++) s = "(?:"+s+")"; try { new RegExp(s).test("aaa") } catch(e) { String(e) }');
run('let o={}; for (let i=0;i<100000;i++) o={a:o}; try { structuredClone } catch(e) { String(e) }');
run('let d=0; class A { toString(){ d++; return String(this) } }; try { String(new A()) } catch(e) { d + " " + e }');
run('let o=[]; for (let i=0;i<100000;i++) o=[o]; try { o.toString() } catch(e) { String(e) }');
run('let o=[]; for (let i=0;i<100000;i++) o=[o]; try { o.flat(Infinity).length } catch(e) { String(e) }');
run('let f = x => x; for (let i=0;i<100000;i++) { const g=f; f = x => g(x) }; try { f(1) } catch(e) { String(e) }');
run('let p = Promise.resolve(1); try { String(1) } catch(e) { String(e) }');
parentPort.postMessage(out);
