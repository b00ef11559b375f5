import { newQuickJSWASMModule, newVariant, RELEASE_SYNC, shouldInterruptAfterDeadline } from 'quickjs-emscripten';
for (const initial of [2, 16, 64, 128, 256]) {
  try {
    const mem = new WebAssembly.Memory({ initial, maximum: initial + 512 });
    const Q = await newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmMemory: mem }));
    const rt = Q.newRuntime(); rt.setInterruptHandler(shouldInterruptAfterDeadline(Date.now() + 20000));
    const ctx = rt.newContext();
    const t = Date.now();
    const r = ctx.evalCode('globalThis.a=[]; try { for(;;) a.push(new Array(1e5).fill(1)) } catch (e) { [a.length, String(e)] }');
    console.log(initial, Date.now() - t, JSON.stringify(ctx.dump(r.value ?? r.error)), mem.buffer.byteLength / 65536);
    r.value?.dispose(); r.error?.dispose();
    ctx.dispose(); rt.dispose();
    // reuse after OOM
    const rt2 = Q.newRuntime(); const c2 = rt2.newContext(); const r2 = c2.evalCode('[1,2,3].map(x=>x*2)'); console.log('after', JSON.stringify(c2.dump(r2.value))); r2.value.dispose(); c2.dispose(); rt2.dispose();
  } catch (e) { console.log(initial, 'fail', String(e).slice(0, 200)); }
}
