import fs from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

const shared = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
  // Read by each worker (keep modules between files); the root's setting below keeps the workers themselves.
  isolate: false,
  // Each file's clean-ups (its databases and data directories), after its own hooks.
  setupFiles: ['test/helpers/file-end.ts'],
};

/**
 * Every test file whose gateways or stores come from the test helpers runs
 * twice: on SQLite (the embedded default) and on a real PostgreSQL
 * (FLOWGATE_TEST_DATABASE=postgres: test/helpers/gateway.ts gives each data
 * directory its own database on an embedded cluster). Files that touch no
 * store, or that choose their database themselves (the PostgreSQL and
 * scale-out tests), run once. Derived from the files, so no list drifts.
 */
const storeBacked = fs
  .readdirSync('test')
  .filter((name) => name.endsWith('.test.ts'))
  .filter((name) => {
    const text = fs.readFileSync(path.join('test', name), 'utf8');
    return /\b(startTestGateway|openTestStore|runCli)\b/.test(text) && !/\b(startPostgres|startCluster|FLOWGATE_DATABASE_URL)\b/.test(text);
  })
  .map((name) => `test/${name}`);

export default defineConfig({
  test: {
    // vitest's default is (cores - 1) workers, a single one on 2 cores; most files spend their time
    // waiting on child processes, chains and timers, so two run side by side.
    maxWorkers: 2,
    // A worker runs file after file in one module registry instead of a fresh process per file: each file
    // otherwise re-imported the gateway's 445 modules (about 2 s; 624 s of a CI run's collect time on a
    // slow 2-core machine). Per-file clean-ups run from the setup file (`shared`, above); helper modules hold no
    // gateway, store or chain at their top level (test files themselves are still run afresh). The pool reads
    // this root setting (and runs each project's files as a group); each worker reads its project's.
    isolate: false,
    // A file that never ends is named in the log (test/helpers/stall-reporter.ts) instead of leaving CI to its time limit.
    reporters: ['default', './test/helpers/stall-reporter.ts'],
    projects: [
      { test: { ...shared, name: 'sqlite', include: ['test/**/*.test.ts'] } },
      {
        test: {
          ...shared,
          name: 'postgres',
          include: storeBacked,
          env: { FLOWGATE_TEST_DATABASE: 'postgres' },
          // One cluster for the project's files (each data directory its own database), not one per file.
          globalSetup: ['test/helpers/postgres-global.ts'],
        },
      },
    ],
  },
});
