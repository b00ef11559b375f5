import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort, startTestGateway, tempDir } from './gateway.ts';
import type { TestPostgres } from './postgres.ts';

/**
 * Gateway instances as separate `flowgate serve` processes, the way a
 * deployment runs them: each its own process, port and data directory, all on
 * whatever database and chain the environment names.
 */

export interface SpawnedGateway {
  url: string;
  pid: number;
  /** SIGTERM (graceful shutdown), resolves on exit. */
  stop(): Promise<void>;
  /** SIGKILL: the instance dies mid-work, leases and all. Resolves on exit. */
  kill(): Promise<void>;
}

const READY_MS = 45_000;

/** `flowgate serve` as a child process; resolves once it answers /healthz with 200. */
export async function spawnGateway(env: Record<string, string>, options: { dataDir?: string } = {}): Promise<SpawnedGateway> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.resolve('bin/flowgate.js'), 'serve'], {
    env: {
      ...process.env,
      FLOWGATE_DEVNET: 'off',
      FLOWGATE_DATA_DIR: options.dataDir ?? tempDir(),
      PORT: String(port),
      HOST: '127.0.0.1',
      FLOWGATE_BASE_URL: `http://127.0.0.1:${port}`,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_MS;
  for (;;) {
    const status = await fetch(`${url}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (child.exitCode !== null) throw new Error(`spawned gateway exited with ${child.exitCode}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('spawned gateway did not answer /healthz');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const signal = (name: NodeJS.Signals) => () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    return exited;
  };
  return { url, pid: child.pid!, stop: signal('SIGTERM'), kill: signal('SIGKILL') };
}

export interface Cluster {
  databaseUrl: string;
  instances: SpawnedGateway[];
  /** The owner key minted on first start (organization `default`). */
  ownerKey: string;
  /** Extra keys minted before the instances started (organization `default`, full scope). */
  keys: string[];
  /** The environment every instance shares (database, master key, chain). */
  env: Record<string, string>;
  close(): Promise<void>;
}

export const CLUSTER_MASTER_KEY = 'cd'.repeat(32);

/**
 * N gateway processes on one fresh PostgreSQL database (and, with `rpcUrl`, one
 * chain through FLOWGATE_RPC_URL_31337). The database is seeded first by an
 * in-process gateway that mints the keys and then stops, so the N spawned
 * processes are the only instances serving.
 */
export async function startCluster(
  postgres: TestPostgres,
  options: { count: number; rpcUrl?: string; env?: Record<string, string>; keys?: number },
): Promise<Cluster> {
  const databaseUrl = await postgres.createDatabase('cluster');
  const env: Record<string, string> = {
    FLOWGATE_DATABASE_URL: databaseUrl,
    FLOWGATE_MASTER_KEY: CLUSTER_MASTER_KEY,
    ...(options.rpcUrl ? { FLOWGATE_RPC_URL_31337: options.rpcUrl } : {}),
    ...options.env,
  };
  const seed = await startTestGateway({ env });
  const ownerKey = seed.ownerKey;
  const keys: string[] = [];
  for (let i = 0; i < (options.keys ?? 0); i++) keys.push(await seed.createKey({ name: `cluster key ${i + 1}` }));
  await seed.close();
  const instances = await Promise.all(Array.from({ length: options.count }, () => spawnGateway(env)));
  return {
    databaseUrl,
    instances,
    ownerKey,
    keys,
    env,
    close: async () => void (await Promise.all(instances.map((i) => i.stop()))),
  };
}
