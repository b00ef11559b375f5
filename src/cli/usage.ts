import path from 'node:path';

/** A mistake in the command line or its environment: one line on stderr, exit code 2. */
export class UsageError extends Error {}

/** `FLOWGATE_DATA_DIR=<dir> ` when the data directory is not the default, so a printed command works as copied. */
export function dataDirPrefix(dataDir: string): string {
  return dataDir === path.resolve('./data') ? '' : `FLOWGATE_DATA_DIR=${JSON.stringify(dataDir)} `;
}
