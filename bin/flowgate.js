#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so `npx flowgate` needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
