import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, tempDir } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { spawnGateway, startCluster, type Cluster, type SpawnedGateway } from './helpers/instances.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';

/**
 * Instances on one PostgreSQL database whose hosts' clocks disagree. The second instance's process runs with its
 * clock ten minutes ahead (test/helpers/skewed-clock.mjs moves Date, as a host without time sync would). Times one
 * instance writes and another compares are on the database server's clock, so the instance ahead neither takes the
 * first one's live runs for dead (their leases, by its own clock, lapsed ten minutes ago) nor stamps its own rows
 * ten minutes into the future.
 */

const SKEW_MS = 10 * 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let postgres: TestPostgres;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let cluster: Cluster;
let ahead: SpawnedGateway | undefined;
let db: pg.Pool;

beforeAll(async () => {
  [postgres, target] = await Promise.all([startPostgres(), startHttpTarget()]);
  // Short leases (renewed every 2 s, reaped 6 s after the last renewal by any instance's sweep, every 3 s).
  cluster = await startCluster(postgres, { count: 1, env: { FLOWGATE_ENGINE_LEASE_MS: '6000', FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' } });
  db = new pg.Pool({ connectionString: cluster.databaseUrl, max: 1 });
  // The server ends this pool's idle connection when the test's cluster goes away; without a listener that is an uncaught error.
  db.on('error', () => {});
}, 120_000);

afterAll(async () => {
  await db?.end();
  await ahead?.stop();
  await cluster?.close();
  await target?.close();
  await postgres?.destroy();
});

const slowGraph = (ms: number) => ({
  nodes: [
    { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
    {
      id: 'slow',
      type: 'action',
      data: { label: 'Slow', config: { actionType: 'HTTP Request', endpoint: `${target.url}/slow?ms=${ms}`, httpMethod: 'GET', timeout: 30000 } },
    },
  ],
  edges: [{ id: 'e1', source: 't', target: 'slow' }],
});

/** The instance ahead, started once (on the cluster's database, with the same short leases). */
async function instanceAhead(): Promise<SpawnedGateway> {
  if (ahead) return ahead;
  const mark = path.join(tempDir('flowgate-clock-'), 'clock');
  ahead = await spawnGateway({
    ...cluster.env,
    FLOWGATE_ENGINE_LEASE_MS: '6000',
    FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1',
    NODE_OPTIONS: `--import ${new URL('./helpers/skewed-clock.mjs', import.meta.url).href}`,
    FLOWGATE_TEST_CLOCK_SKEW_MS: String(SKEW_MS),
    FLOWGATE_TEST_CLOCK_SKEW_MARK: mark,
  });
  // Its process's clock is ahead (as it read it at start), so nothing here can pass by accident.
  expect(Number(fs.readFileSync(mark, 'utf8')) - Date.now()).toBeGreaterThan(SKEW_MS - 60_000);
  return ahead;
}

describe('an instance whose clock runs ten minutes ahead', () => {
  it("leaves another instance's live run alone, and stamps what it writes on the database's clock", async () => {
    const [first] = cluster.instances;
    const created = await fetchJson(`${first!.url}/api/workflows/create`, {
      method: 'POST',
      key: cluster.ownerKey,
      body: JSON.stringify({ name: 'Slow', ...slowGraph(12_000) }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await fetchJson(`${first!.url}/api/workflows/${created.body.id}/execute`, { method: 'POST', key: cluster.ownerKey, body: '{}' });
    const executionId: string = started.body.executionId;
    for (let i = 0; i < 100; i++) {
      const { rows } = await db.query<{ status: string }>('select status from workflow_executions where id = $1', [executionId]);
      if (rows[0]?.status === 'running') break;
      await sleep(100);
    }

    const instance = await instanceAhead();

    // The run's step takes 12 s, two leases: the instance ahead sweeps for lapsed leases at start and every 3 s meanwhile.
    const waited = await fetchJson(`${first!.url}/api/workflows/executions/${executionId}/wait?timeoutMs=40000`, { key: cluster.ownerKey });
    expect(waited.body, JSON.stringify(waited.body)).toMatchObject({ executionId, status: 'success', completed: true });

    // A run it creates itself is stamped on the database's clock, not ten minutes ahead.
    const own = await fetchJson(`${instance.url}/api/workflows/${created.body.id}/execute`, { method: 'POST', key: cluster.ownerKey, body: '{}' });
    expect(own.status, JSON.stringify(own.body)).toBeLessThan(300);
    const { rows } = await db.query<{ created_at: string; now: string }>(
      'select created_at, (extract(epoch from clock_timestamp()) * 1000)::float8 as now from workflow_executions where id = $1',
      [own.body.executionId],
    );
    expect(Math.abs(Date.parse(rows[0]!.created_at) - Number(rows[0]!.now))).toBeLessThan(60_000);
  }, 120_000);

  it("fires a schedule at its time by the database's clock, not as soon as its own clock has passed it", async () => {
    const [first] = cluster.instances;
    // Next due five minutes from now (UTC): by the clock of the instance ahead, already five minutes overdue.
    const at = new Date(Date.now() + 5 * 60_000);
    const created = await fetchJson(`${first!.url}/api/workflows/create`, {
      method: 'POST',
      key: cluster.ownerKey,
      body: JSON.stringify({
        name: 'In five minutes',
        nodes: [
          {
            id: 't',
            type: 'trigger',
            data: {
              label: 'Then',
              config: { triggerType: 'Schedule', scheduleCron: `${at.getUTCMinutes()} ${at.getUTCHours()} * * *`, scheduleTimezone: 'UTC' },
            },
          },
          { id: 's', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1]' } } },
        ],
        edges: [{ source: 't', target: 's' }],
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const schedule = async () =>
      (await db.query<{ next_run_at: string }>('select next_run_at from workflow_schedules where workflow_id = $1', [created.body.id])).rows[0];
    const due = Number((await schedule())!.next_run_at);
    expect(due - Date.now()).toBeGreaterThan(60_000);

    // Both instances tick every second; the one ahead has passed the occurrence by its own clock for all of it.
    await instanceAhead();
    await sleep(6_000);
    const { rows } = await db.query<{ n: string }>('select count(*) as n from workflow_executions where workflow_id = $1', [created.body.id]);
    expect(Number(rows[0]!.n)).toBe(0);
    expect(Number((await schedule())!.next_run_at)).toBe(due);
  }, 60_000);
});
