import { test, expect } from 'vitest';
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
test('worker', async () => {
  console.log(typeof import.meta.resolve, import.meta.url);
  const require = createRequire(import.meta.url);
  const tsxApi = pathToFileURL(require.resolve('tsx/esm/api')).href.replace(/index\.cjs$/, 'index.mjs');
  const target = new URL('./w.ts', import.meta.url).href;
  const boot = `import { register } from ${JSON.stringify(tsxApi)}; register(); await import(${JSON.stringify(target)});`;
  const w = new Worker(new URL('data:text/javascript,' + encodeURIComponent(boot)));
  const m = await new Promise((res, rej) => { w.on('message', res); w.on('error', rej); });
  await w.terminate();
  expect((m as any).x).toBe(42);
});
