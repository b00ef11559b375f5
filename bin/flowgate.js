#!/usr/bin/env node
// Runs the TypeScript sources with no build step: from an esbuild bundle that bin/bundle.js keeps
// in node_modules/.cache and rebuilds when a source or package changes, or, should that fail, through tsx.
import { pathToFileURL } from 'node:url';
import { bundledEntry } from './bundle.js';

let entry;
try {
  // Source maps are written next to the bundle; `node --enable-source-maps` makes stack traces name
  // the .ts lines. Off by default: Node then parses the maps of every chunk at load (~0.1 s, ~8 MB).
  entry = pathToFileURL(await bundledEntry()).href;
} catch (error) {
  process.stderr.write(`flowgate: running the sources through tsx (no bundle: ${error instanceof Error ? error.message.split('\n')[0] : error})\n`);
  const { register } = await import('tsx/esm/api');
  register();
  entry = '../src/cli.ts';
}
const cli = await import(entry);
const code = await cli.main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
