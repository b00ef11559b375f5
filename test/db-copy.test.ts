import fs from 'node:fs';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSandbox } from '../src/sandbox/quickjs.ts';
import { exportWalletKeys } from '../src/wallets/wallets.ts';
import { runCli } from './helpers/cli.ts';
import { fetchJson, freePort, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';
import { action, linear } from './helpers/web3.ts';

/**
 * Issue 19, part 6: `flowgate db copy --to postgres://…` moves a populated
 * SQLite data directory into an empty PostgreSQL database, and a gateway on
 * PostgreSQL then serves the same workflows, runs, logs, keys, sealed
 * credentials, wallet and analytics. Real gateways, the real CLI binary, a
 * real PostgreSQL server.
 */

let postgres: TestPostgres;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let source: TestGateway;
let sourceDir: string;
const keys: Record<'owner' | 'reader' | 'acme' | 'revoked', string> = { owner: '', reader: '', acme: '', revoked: '' };
const flows: { sums: string; fails: string; idle: string } = { sums: '', fails: '', idle: '' };
let integrationId: string;
let before: Awaited<ReturnType<typeof snapshot>>;
let wallet: Awaited<ReturnType<typeof exportWalletKeys>>;

/** The copy connects as its own role, with a password that appears nowhere else (not in a temp path, say). */
const ROLE = { user: 'copier', password: 'Copier-Secret-7f3a' };
let createDatabase: () => Promise<string>;

const ENV = { FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1', FLOWGATE_RATE_LIMITS: 'off' };

const api = (gw: TestGateway, p: string, init: { key?: string; method?: string; json?: unknown } = {}) =>
  fetchJson(`${gw.url}${p}`, { key: init.key ?? keys.owner, method: init.method, body: init.json === undefined ? undefined : JSON.stringify(init.json) });

/** Everything a user reads back: workflows, each run with its log, an integration, analytics. */
async function snapshot(gw: TestGateway) {
  const workflows = (await api(gw, '/api/workflows')).body as { id: string; name: string }[];
  const runs: Record<string, unknown> = {};
  for (const id of Object.values(flows)) {
    const executions = (await api(gw, `/api/workflows/${id}/executions`)).body as { id: string; status: string }[];
    runs[id] = await Promise.all(executions.map(async (e) => ({ execution: e, logs: (await api(gw, `/api/workflows/executions/${e.id}/logs`)).body })));
  }
  return {
    workflows,
    runs,
    integration: (await api(gw, `/api/integrations/${integrationId}`)).body,
    summary: (await api(gw, '/api/analytics/summary')).body,
    series: (await api(gw, '/api/analytics/time-series?range=7d')).body,
    acme: (await api(gw, '/api/workflows', { key: keys.acme })).body,
  };
}

async function runToEnd(gw: TestGateway, workflowId: string) {
  const started = await api(gw, `/api/workflows/${workflowId}/execute`, { method: 'POST', json: { input: { who: 'copy' } } });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const waited = await api(gw, `/api/workflows/executions/${started.body.executionId}/wait?timeoutMs=20000`);
  return waited.body as { status: string };
}

/** Rows per table of a PostgreSQL database (Kysely's bookkeeping left out). */
async function postgresCounts(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' and table_name not like 'kysely_%'`,
    );
    const counts: Record<string, number> = {};
    for (const { table_name } of rows) counts[table_name] = Number((await client.query(`select count(*) as n from "${table_name}"`)).rows[0].n);
    return counts;
  } finally {
    await client.end();
  }
}

const ROLLUPS = 'select * from run_rollups order by organization_id, hour, source';

async function rollups(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // pg reads bigint as text.
    const number = ([name, value]: [string, unknown]) => [name, name === 'organization_id' || name === 'source' ? value : Number(value)];
    return (await client.query(ROLLUPS)).rows.map((r) => Object.fromEntries(Object.entries(r).map(number)));
  } finally {
    await client.end();
  }
}

function sqliteRollups(dataDir: string) {
  const db = new Sqlite(path.join(dataDir, 'flowgate.sqlite'), { readonly: true });
  try {
    return db.prepare(ROLLUPS).all();
  } finally {
    db.close();
  }
}

function sqliteCounts(dataDir: string): Record<string, number> {
  const db = new Sqlite(path.join(dataDir, 'flowgate.sqlite'), { readonly: true });
  try {
    const tables = db.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'kysely_%'`).all() as {
      name: string;
    }[];
    return Object.fromEntries(tables.map(({ name }) => [name, (db.prepare(`select count(*) as n from "${name}"`).get() as { n: number }).n]));
  } finally {
    db.close();
  }
}

/** The printed count table: TABLE  SQLITE  POSTGRESQL. */
function printedCounts(stdout: string): Record<string, [number, number]> {
  return Object.fromEntries([...stdout.matchAll(/^([a-z_]+) +(\d+) +(\d+)$/gm)].map((m) => [m[1]!, [Number(m[2]), Number(m[3])]]));
}

const copy = (to: string, dataDir = sourceDir, env: Record<string, string> = {}) => runCli(['db', 'copy', '--to', to], { FLOWGATE_DATA_DIR: dataDir, ...env });

/** A copy of the populated data directory to break on purpose. */
function cloneSource(): string {
  const dir = tempDir('flowgate-copy-');
  fs.cpSync(sourceDir, dir, { recursive: true });
  return dir;
}

beforeAll(async () => {
  postgres = await startPostgres();
  const admin = new pg.Client({ connectionString: postgres.url() });
  await admin.connect();
  await admin.query(`create role ${ROLE.user} login superuser password '${ROLE.password}'`);
  await admin.end();
  createDatabase = async () => {
    const url = new URL(await postgres.createDatabase('copy'));
    url.username = ROLE.user;
    url.password = ROLE.password;
    return url.toString();
  };
  target = await startHttpTarget();
  // SQLite even when the suite runs on PostgreSQL: that is what is being moved.
  source = await startTestGateway({ env: { ...ENV, FLOWGATE_DATABASE_URL: '' } });
  sourceDir = source.dataDir;
  keys.owner = source.ownerKey;
  keys.reader = await source.createKey({ scope: 'mcp:read', name: 'reader' });
  keys.acme = await source.createKey({ org: 'acme', name: 'acme bot' });
  keys.revoked = await source.createKey({ name: 'to revoke' });
  const { services } = source.gateway;
  const { organization } = await services.organizations.ensure('default');
  const revokedRecord = (await services.keys.list(organization.id)).find((k) => k.name === 'to revoke')!;
  await services.keys.revoke(organization.id, revokedRecord.id);

  const create = async (name: string, graph: object, key = keys.owner) => {
    const res = await fetchJson(`${source.url}/api/workflows/create`, { key, method: 'POST', body: JSON.stringify({ name, ...graph }) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.id as string;
  };
  flows.sums = await create('Copy sums', linear(action('sum1', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' })));
  flows.fails = await create('Copy fails', linear(action('boom', 'Boom', { actionType: 'code/run-code', code: 'throw new Error("kaboom")' })));
  flows.idle = await create('Copy idle', linear(action('sum2', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[1]' })));
  await create('Acme flow', linear(action('a', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[3]' })), keys.acme);
  expect((await runToEnd(source, flows.sums)).status).toBe('success');
  expect((await runToEnd(source, flows.sums)).status).toBe('success');
  expect((await runToEnd(source, flows.fails)).status).toBe('error');

  const integration = await api(source, '/api/integrations', {
    method: 'POST',
    json: { name: 'hook', type: 'webhook', config: { url: `${target.url}/hook`, headers: { authorization: 'Bearer sealed-header-token' } } },
  });
  expect(integration.status, JSON.stringify(integration.body)).toBe(201);
  integrationId = integration.body.id;

  // Three days back, so analytics reads these runs from the hourly rollups (the current hour is counted from the runs).
  const back = (column: string) => sql.raw<string>(`strftime('%Y-%m-%dT%H:%M:%fZ', ${column}, '-3 days')`);
  await services.store
    .updateTable('workflow_executions')
    .set({ created_at: back('created_at'), started_at: back('started_at'), completed_at: back('completed_at') })
    .execute();

  before = await snapshot(source);
  wallet = await exportWalletKeys(services.store, services.secrets, organization.id);
  await source.close();
}, 120_000);

afterAll(async () => {
  await closeSandbox();
  await target?.close();
  await postgres?.destroy();
});

describe('flowgate db copy', { timeout: 180_000 }, () => {
  it('copies every table into an empty PostgreSQL database, and a gateway there serves the same data with the same keys', async () => {
    const url = await createDatabase();
    const res = await copy(url);
    expect(res.code, res.stderr + res.stdout).toBe(0);
    expect(res.stdout + res.stderr).not.toContain(ROLE.password);
    expect(res.stdout).toContain(`into postgres://${ROLE.user}@127.0.0.1:${postgres.port}/`);

    // Every table of the data directory, with its count on both sides.
    const expected = sqliteCounts(sourceDir);
    const printed = printedCounts(res.stdout);
    expect(Object.keys(printed).sort()).toEqual(Object.keys(expected).sort());
    for (const [table, n] of Object.entries(expected)) expect(printed[table], table).toEqual([n, n]);
    expect(await postgresCounts(url)).toEqual(expected);
    // The rollups arrive as they were: the copied runs are not counted a second time by the target's triggers.
    expect(await rollups(url)).toEqual(sqliteRollups(sourceDir));
    expect(expected.workflow_execution_logs).toBeGreaterThan(0);
    expect(expected.run_rollups).toBeGreaterThan(0);

    // The master key stayed in the data directory: the output says where, never what.
    const masterKey = fs.readFileSync(path.join(sourceDir, 'master.key'), 'utf8').trim();
    expect(res.stdout).toContain(path.join(sourceDir, 'master.key'));
    expect(res.stdout + res.stderr).not.toContain(masterKey);

    const moved = await startTestGateway({ env: { ...ENV, FLOWGATE_DATABASE_URL: url, FLOWGATE_MASTER_KEY: masterKey } });
    try {
      const after = await snapshot(moved);
      expect(after).toEqual(before);
      const runs = before.runs[flows.sums] as { execution: { status: string }; logs: { logs: { nodeId: string; status: string }[] } }[];
      expect(runs.map((r) => r.execution.status)).toEqual(['success', 'success']);
      expect(runs[0]!.logs.logs.map((l) => [l.nodeId, l.status])).toContainEqual(['sum1', 'success']);
      expect((before.summary as { totalRuns: number }).totalRuns).toBe(3);

      // Keys: the same ones authenticate with the same scope; the revoked one stays revoked.
      expect((await api(moved, '/api/workflows', { key: keys.reader })).status).toBe(200);
      expect((await api(moved, '/api/workflows/create', { key: keys.reader, method: 'POST', json: { name: 'x' } })).status).toBe(403);
      expect((await api(moved, '/api/workflows', { key: keys.revoked })).status).toBe(401);

      // Sealed secrets open with the same master key: the wallet, and the webhook's sealed URL.
      const { services } = moved.gateway;
      const { organization } = await services.organizations.ensure('default');
      expect(await exportWalletKeys(services.store, services.secrets, organization.id)).toEqual(wallet);
      const hits = target.hits.length;
      const tested = await api(moved, `/api/integrations/${integrationId}/test`, { method: 'POST', json: {} });
      expect(tested.status, JSON.stringify(tested.body)).toBe(200);
      expect(target.hits.slice(hits).map((h) => h.url)).toEqual(['/hook']);

      // The copied rollups are not counted twice, and the triggers count new runs again.
      expect((await runToEnd(moved, flows.idle)).status).toBe('success');
      const summary = (await api(moved, '/api/analytics/summary')).body;
      expect(summary).toMatchObject({ totalRuns: 4, successfulRuns: 3, failedRuns: 1 });
      const counted = (await rollups(url)).filter((r) => r.source === 'workflow' && r.organization_id === organization.id);
      expect(counted.reduce((sum, r) => sum + (r.runs as number), 0)).toBe(4);
    } finally {
      await moved.close();
    }

    // A second copy into the now used database is refused, and changes nothing.
    const counts = await postgresCounts(url);
    const again = await copy(url);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/refused: the target database postgres:\/\/copier@127\.0\.0\.1:\d+\/\S+ is not empty \(rows in .*organizations/);
    expect(again.stderr).toContain('nothing was written to');
    expect(again.stdout + again.stderr).not.toContain(ROLE.password);
    expect(await postgresCounts(url)).toEqual(counts);
  });

  it('a failure part-way leaves the target empty, and the same target then takes a good copy', async () => {
    const broken = cloneSource();
    const db = new Sqlite(path.join(broken, 'flowgate.sqlite'));
    db.pragma('foreign_keys = OFF');
    // A log row whose run is gone (written with foreign keys off): PostgreSQL refuses it, late in the copy.
    const log = db.prepare('select * from workflow_execution_logs limit 1').get() as Record<string, unknown>;
    db.prepare(
      `insert into workflow_execution_logs (${Object.keys(log).join(', ')}) values (${Object.keys(log)
        .map(() => '?')
        .join(', ')})`,
    ).run(...Object.values({ ...log, id: 'orphan-log', execution_id: 'no-such-run' }));
    db.close();

    const url = await createDatabase();
    const res = await copy(url, broken);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^flowgate: failed: .*foreign key/m);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    const counts = await postgresCounts(url);
    expect(Object.keys(counts).length).toBeGreaterThan(20);
    expect(Object.entries(counts).filter(([, n]) => n > 0)).toEqual([]);

    const good = await copy(url);
    expect(good.code, good.stderr).toBe(0);
    expect(await postgresCounts(url)).toEqual(sqliteCounts(sourceDir));
  });

  it('refuses a data directory written by a newer Flowgate, a master key that does not open its wallets, and a missing directory', async () => {
    const newer = cloneSource();
    const db = new Sqlite(path.join(newer, 'flowgate.sqlite'));
    db.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('999_from_the_future', new Date().toISOString());
    db.close();
    const url = await createDatabase();
    const res = await copy(url, newer);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('was written by a newer Flowgate (migrations 999_from_the_future)');
    expect(await postgresCounts(url)).toEqual({});

    // Under a key that does not open its wallets the copy would strand them: refused before the target is touched.
    const otherKey = 'ab'.repeat(32);
    const wrongKey = await copy(url, sourceDir, { FLOWGATE_MASTER_KEY: otherKey });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toContain(`refused: the master key in effect (FLOWGATE_MASTER_KEY) does not open the wallets in ${sourceDir}`);
    expect(wrongKey.stdout + wrongKey.stderr).not.toContain(otherKey);
    expect(await postgresCounts(url)).toEqual({});

    const missing = path.join(tempDir(), 'nothing-here');
    const gone = await copy(url, missing);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain(`No Flowgate database in ${missing}`);
    expect(fs.existsSync(missing)).toBe(false);

    // A file that is not a database: refused in one line that names the file and says how to point at the right one.
    const damaged = tempDir();
    fs.writeFileSync(path.join(damaged, 'flowgate.sqlite'), 'not a database at all, but long enough to have a header\n'.repeat(100));
    const garbage = await copy(url, damaged);
    expect(garbage.code).toBe(1);
    expect(garbage.stderr).toContain(`${path.join(damaged, 'flowgate.sqlite')} is not a usable SQLite database (file is not a database)`);
    expect(garbage.stderr).toContain('pass --data-dir DIR');
    expect(garbage.stderr).not.toMatch(/\n\s+at /);
    expect(await postgresCounts(url)).toEqual({});
  });

  it('refuses a malformed, unreachable or wrong --to without echoing the password or a stack trace', async () => {
    const secret = 'pw-Never-Shown-42';
    const malformed = await copy(`mysql://root:${secret}@db.internal/flowgate`);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('--to must be a postgres:// or postgresql:// URL');

    const port = await freePort();
    const unreachable = await copy(`postgres://postgres:${secret}@127.0.0.1:${port}/flowgate`);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(`cannot reach PostgreSQL at postgres://postgres@127.0.0.1:${port}/flowgate`);

    const wrongPassword = await copy(`postgres://postgres:${secret}@127.0.0.1:${postgres.port}/postgres`);
    expect(wrongPassword.code).toBe(1);
    expect(wrongPassword.stderr).toContain('password authentication failed');

    const noTarget = await runCli(['db', 'copy'], { FLOWGATE_DATA_DIR: sourceDir });
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toContain('db copy needs --to postgres://');

    for (const res of [malformed, unreachable, wrongPassword]) {
      expect(res.stdout + res.stderr).not.toContain(secret);
      expect(res.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
