import { spawnGateway as spawnGatewayProcess, type SpawnedGateway } from '../../scripts/gateway-process.ts';
import { startTestGateway, tempDir, testDatabaseEnv } from './gateway.ts';
import { until } from './until.ts';
import type { TestPostgres } from './postgres.ts';

export type { SpawnedGateway };

/** `flowgate serve` as a child process, on a data directory removed when the test file ends unless one is given. */
export const spawnGateway = (env: Record<string, string>, options: { dataDir?: string } = {}) =>
  spawnGatewayProcess(env, { dataDir: options.dataDir ?? tempDir('flowgate-instance-') });

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
    // A thousand runs over REST in a minute: as in test/helpers/gateway.ts.
    FLOWGATE_RATE_LIMIT_REST_PER_ORG: '1000000',
    FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP: '1000000',
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

/**
 * A `flowgate serve` process on `dataDir` (its test database too), given work by `start`, killed with SIGKILL once
 * `reached` says the work is where the test wants it (a transfer in the pool, a request waiting on its node): the
 * state a crash leaves. Returns what `start` returned, unawaited (a request it sent fails with the kill).
 */
export async function killedMidway<T>(env: Record<string, string>, dataDir: string, start: (url: string) => T, reached: () => Promise<boolean>): Promise<T> {
  const instance = await spawnGateway({ ...env, ...(await testDatabaseEnv(dataDir, undefined)) }, { dataDir });
  try {
    const started = start(instance.url);
    await until('the work to reach the point of the kill', reached);
    return started;
  } finally {
    await instance.kill();
  }
}
