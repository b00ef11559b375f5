import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const tsxApi = pathToFileURL(require.resolve('tsx/esm/api')).href.replace(/index\.cjs$/, 'index.mjs');
const target = new URL('./w.ts', import.meta.url).href;
const boot = `import { register } from ${JSON.stringify(tsxApi)}; register(); await import(${JSON.stringify(target)});`;
for (let i = 0; i < 3; i++) {
const t = performance.now();
const w = new Worker(new URL('data:text/javascript,' + encodeURIComponent(boot)), { resourceLimits: { stackSizeMb: 16 } });
await new Promise((res) => w.on('message', res));
console.log('boot ms', performance.now() - t);
await w.terminate();
}
