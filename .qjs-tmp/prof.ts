import { loadModule, runJob } from '../src/sandbox/evaluate.ts';
import { newQuickJSWASMModule } from 'quickjs-emscripten';
const m = await loadModule(32 * 1024 * 1024);
const job = { id: 1, mode: 'expression' as const, source: '__t0 > 0.1', names: ['__t0'], argsJson: '[5]', timeoutMs: 1000, memoryBytes: 32 * 1024 * 1024, subject: 'Expression' };
for (let k = 0; k < 3; k++) {
let t = performance.now();
for (let i = 0; i < 1000; i++) runJob(m, job);
console.log('runJob', (performance.now() - t) / 1000, 'ms');
}
let t = performance.now();
for (let i = 0; i < 1000; i++) { const rt = m.newRuntime(); const c = rt.newContext(); c.dispose(); rt.dispose(); }
console.log('rt+ctx', (performance.now() - t) / 1000);
const m2 = await newQuickJSWASMModule();
t = performance.now();
for (let i = 0; i < 1000; i++) { const rt = m2.newRuntime(); const c = rt.newContext(); c.dispose(); rt.dispose(); }
console.log('rt+ctx growable', (performance.now() - t) / 1000);
t = performance.now();
for (let i = 0; i < 1000; i++) { const rt = m.newRuntime(); const c = rt.newContext(); c.evalCode('(function(){ return 1 })').value!.dispose(); c.dispose(); rt.dispose(); }
console.log('rt+ctx+small eval', (performance.now() - t) / 1000);
