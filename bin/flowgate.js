#!/usr/bin/env node
// Runs the TypeScript sources with no build step: from an esbuild bundle that bin/bundle.js keeps
// in node_modules/.cache and rebuilds when a source changes, or, should that fail, through tsx.
import { pathToFileURL } from 'node:url';
import { bundledEntry } from './bundle.js';

let entry;
try {
  entry = pathToFileURL(await bundledEntry()).href;
  // Stack traces name the .ts lines (the bundle's source maps).
  process.setSourceMapsEnabled(true);
} catch (error) {
  process.stderr.write(`flowgate: running the sources through tsx (no bundle: ${error instanceof Error ? error.message.split('\n')[0] : error})\n`);
  const { register } = await import('tsx/esm/api');
  register();
  entry = '../src/cli.ts';
}
const cli = await import(entry);
const code = await cli.main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
