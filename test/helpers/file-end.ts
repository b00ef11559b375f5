import { afterAll } from 'vitest';

/**
 * Clean-ups to run when each test file ends. A helper module is evaluated once
 * per worker when files share one (vitest's isolate: false), so a hook it
 * registered at its top level would run for the first file only; this setup
 * file is run for every file, and runs what the helpers registered.
 * Registered before the file's own hooks, so it runs after them (once the
 * file's gateways are closed).
 */
const FILE_END = Symbol.for('flowgate.test.fileEnd');
type Registry = { [FILE_END]?: Array<() => Promise<void> | void> };

export function onFileEnd(cleanUp: () => Promise<void> | void): void {
  ((globalThis as Registry)[FILE_END] ??= []).push(cleanUp);
}

afterAll(async () => {
  for (const cleanUp of (globalThis as Registry)[FILE_END] ?? []) await cleanUp();
});
