import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, onFreePort } from '../../scripts/free-port.ts';
import { loadConfig } from '../../src/config.ts';
import { createGateway, type Gateway } from '../../src/gateway.ts';
import { openStore, type Store } from '../../src/store/db.ts';
import type { AnyTool, KeyScope } from '../../tools/define.ts';
import { inject } from 'vitest';
import { onFileEnd } from './file-end.ts';
import type { PostgresDatabases } from '../../scripts/embedded-postgres.ts';

/** A real gateway on a free loopback port with a temp data directory. */

export interface TestGateway {
  url: string;
  ownerKey: string;
  dataDir: string;
  gateway: Gateway;
  createKey(options?: { scope?: KeyScope; org?: string; name?: string }): Promise<string>;
  close(): Promise<void>;
}

/** The directories this test file made: removed once its hooks have run (a suite run used to leave 100 MB or more in the temp directory). */
const madeDirs: string[] = [];

export function tempDir(prefix = 'flowgate-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

export { freePort };

/**
 * FLOWGATE_TEST_DATABASE=postgres runs a test file's gateways on a real
 * PostgreSQL: the cluster the run shares (test/helpers/postgres-global.ts), or
 * one for this file when run without it, with one database per data directory,
 * so a restart on the same directory finds its data again.
 */
const databaseByDataDir = new Map<string, string>();
let postgres: Promise<{ databases: PostgresDatabases; done(): Promise<void> }> | undefined;
function filePostgres(): NonNullable<typeof postgres> {
  const shared = inject('postgresAdminUrl');
  // Imported here: SQLite files never load the PostgreSQL client.
  return import('./postgres.ts').then(async ({ postgresDatabases, startPostgres }) => {
    if (shared) {
      const databases = postgresDatabases(shared);
      return { databases, done: async () => void (await Promise.all([...databaseByDataDir.values()].map((url) => databases.dropDatabase(url)))) };
    }
    const own = await startPostgres();
    return { databases: own, done: () => own.destroy() };
  });
}
onFileEnd(async () => {
  await (await postgres)?.done();
  postgres = undefined;
  databaseByDataDir.clear();
  // FLOWGATE_TEST_KEEP_DIRS=1 keeps them, to look at a failed test's data directory.
  if (process.env.FLOWGATE_TEST_KEEP_DIRS !== '1') for (const dir of madeDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * The database a data directory's test gateways use; child processes (the CLI, `flowgate mcp`) on that directory get it too.
 * A given FLOWGATE_DATABASE_URL is kept; an empty one means SQLite even in a PostgreSQL run (test/db-copy.test.ts).
 */
export async function testDatabaseEnv(dataDir: string, env: Record<string, string> | undefined): Promise<Record<string, string>> {
  if (process.env.FLOWGATE_TEST_DATABASE !== 'postgres' || env?.FLOWGATE_DATABASE_URL !== undefined) return {};
  let url = databaseByDataDir.get(dataDir);
  if (!url) {
    postgres ??= filePostgres();
    url = await (await postgres).databases.createDatabase('gw');
    databaseByDataDir.set(dataDir, url);
  }
  return { FLOWGATE_DATABASE_URL: url };
}

/** A store without a gateway, on the database FLOWGATE_TEST_DATABASE selects (a temp SQLite file by default). */
export async function openTestStore(): Promise<Store> {
  return openTestStoreFor(tempDir());
}

/** The store of a data directory's test gateways, opened beside them. */
export async function openTestStoreFor(dataDir: string): Promise<Store> {
  const { FLOWGATE_DATABASE_URL: databaseUrl } = await testDatabaseEnv(dataDir, undefined);
  return openStore({ dataDir, databaseUrl }).store;
}

export async function startTestGateway(options: { env?: Record<string, string>; dataDir?: string; tools?: readonly AnyTool[] } = {}): Promise<TestGateway> {
  const dataDir = options.dataDir ?? tempDir();
  return onFreePort(
    (port) => startTestGatewayOn(port, { ...options, dataDir }),
    (error) => (error as NodeJS.ErrnoException).code === 'EADDRINUSE',
  );
}

async function startTestGatewayOn(port: number, options: { env?: Record<string, string>; dataDir: string; tools?: readonly AnyTool[] }): Promise<TestGateway> {
  const { dataDir } = options;
  const config = loadConfig({
    ...(await testDatabaseEnv(dataDir, options.env)),
    PORT: String(port),
    HOST: '127.0.0.1',
    FLOWGATE_DATA_DIR: dataDir,
    FLOWGATE_BASE_URL: `http://127.0.0.1:${port}`,
    FLOWGATE_DEVNET: 'off',
    // Tests sign in many wallets from one IP; the limits themselves are tested with their own values (test/siwe-sessions.test.ts).
    FLOWGATE_RATE_LIMIT_SIWE_NONCE_PER_IP: '1000',
    FLOWGATE_RATE_LIMIT_SIWE_VERIFY_PER_IP: '1000',
    // Files drive one organization harder than any user would; the limit is tested with its own value (test/rest-request-limit.test.ts).
    FLOWGATE_RATE_LIMIT_REST_PER_ORG: '1000000',
    FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP: '1000000',
    ...options.env,
  });
  const gateway = await createGateway(config, { tools: options.tools });
  let url: string;
  try {
    url = await gateway.listen();
  } catch (error) {
    await gateway.close();
    throw error;
  }
  const { services } = gateway;
  // Restarting on an existing data directory: mint a fresh owner key instead of the first-start one.
  const ownerKey =
    gateway.firstStart?.ownerKey ??
    (await (async () => {
      const { organization, owner } = await services.organizations.ensure('default');
      return (await services.keys.create({ organizationId: organization.id, userId: owner.id, name: 'test restart', scope: null })).key;
    })());

  return {
    url,
    ownerKey,
    dataDir,
    gateway,
    async createKey({ scope, org = 'default', name = 'test key' } = {}) {
      const { organization, owner } = await services.organizations.ensure(org);
      const { key } = await services.keys.create({ organizationId: organization.id, userId: owner.id, name, scope: scope ?? null });
      return key;
    },
    close: () => gateway.close(),
  };
}

/** fetch + JSON body, keeping the response for header and status assertions. */
export async function fetchJson(url: string, init: RequestInit & { key?: string } = {}) {
  const headers = new Headers(init.headers);
  if (init.key) headers.set('authorization', `Bearer ${init.key}`);
  if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  const response = await fetch(url, { ...init, headers });
  const text = await response.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body };
}

/**
 * A GET through node:http, sending exactly the given headers. (fetch adds
 * `Cache-Control: no-cache` to conditional requests, which hides 304s.)
 */
export async function rawGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
