import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * tsx's ESM API as a file URL, from its package.json `exports` (its CommonJS
 * build cannot register hooks from a worker, and a data: URL module cannot
 * resolve bare specifiers).
 */
function tsxApiUrl(): string {
  const packageFile = createRequire(import.meta.url).resolve('tsx/package.json');
  const manifest = JSON.parse(readFileSync(packageFile, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  return new URL(manifest.exports['./esm/api']!.import.default, pathToFileURL(packageFile)).href;
}

/**
 * A worker thread's entry for a TypeScript module: worker entries are
 * TypeScript (also when the gateway runs from its bundle, which maps
 * `import.meta.url` back to the sources), so the worker first registers tsx
 * (as bin/flowgate.js does for the main thread), then imports the entry. The
 * bootstrap is a constant module given as a data: URL.
 */
export function typeScriptWorkerUrl(entry: URL): URL {
  const source = [`const { register } = await import(${JSON.stringify(tsxApiUrl())});`, `register();`, `await import(${JSON.stringify(entry.href)});`].join(
    '\n',
  );
  return new URL(`data:text/javascript,${encodeURIComponent(source)}`);
}
