import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { fetchJson, freePort, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { startHttpTarget } from './helpers/http-target.ts';

/**
 * A hostile tenant's reach through integrations (issue 12, A1, A5, A6, B9):
 * SQLite files outside the operator's directory (above all the gateway's own
 * database), statements that escape the file, PostgreSQL hosts as a port
 * scanner, and integration tests that claim success without contacting anyone.
 */

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function makeDb(file: string, sql = "create table notes (id integer primary key, body text); insert into notes (body) values ('hello')") {
  const db = new SQLite(file);
  db.exec(sql);
  db.close();
}

type Api = (p: string, init?: RequestInit & { json?: unknown }) => ReturnType<typeof fetchJson>;
const client =
  (gw: TestGateway, key: string): Api =>
  (p, init = {}) =>
    fetchJson(`${gw.url}${p}`, { key, ...init, body: init.json === undefined ? init.body : JSON.stringify(init.json) });

async function runQuery(api: Api, integrationId: string, dbQuery: string) {
  const created = await api('/api/workflows/create', {
    method: 'POST',
    json: {
      name: 'Query',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        { id: 'q', type: 'action', data: { label: 'Query', config: { actionType: 'Database Query', integrationId, dbQuery } } },
      ],
      edges: [{ source: 't', target: 'q' }],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', json: { input: {} } });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const done = (await api(`/api/workflows/executions/${started.body.executionId}/wait`)).body as { status: string; error?: string; output?: any };
  return { ...done, executionId: started.body.executionId as string };
}

/** Child processes of this test process running a SQLite query (src/org/sqlite-process.ts). */
const queryProcesses = () =>
  execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes('better-sqlite3'));

describe('sqlite database integrations', () => {
  let gw: TestGateway;
  let owner: Api;
  let hostile: Api;
  let dir: string;
  let outsideDb: string;
  let ownDb: string;
  let ownerKeyHash: string;

  beforeAll(async () => {
    dir = fs.realpathSync(tempDir('flowgate-sqlite-dir-'));
    outsideDb = path.join(tempDir(), 'outside.sqlite');
    makeDb(outsideDb);
    makeDb(path.join(dir, 'shop.sqlite'));
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a database, just text that is long enough to have a header');
    fs.mkdirSync(path.join(dir, 'sub'));
    // A short lease: a cancel reaches a running step within a second.
    gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_SQLITE_INTEGRATION_DIR: dir, FLOWGATE_ENGINE_LEASE_MS: '1000' } });
    ownDb = path.join(gw.dataDir, 'flowgate.sqlite');
    // Links inside the allowed directory that lead out of it.
    fs.symlinkSync(ownDb, path.join(dir, 'gateway.sqlite'));
    fs.symlinkSync(outsideDb, path.join(dir, 'elsewhere.sqlite'));
    fs.symlinkSync(gw.dataDir, path.join(dir, 'data'));
    owner = client(gw, gw.ownerKey);
    hostile = client(gw, await gw.createKey({ org: 'hostile' }));
    ownerKeyHash = sha256(gw.ownerKey);
  });
  afterAll(async () => {
    await gw?.close();
  });

  const create = (api: Api, config: Record<string, unknown>) =>
    api('/api/integrations', { method: 'POST', json: { name: `db ${Math.random()}`, type: 'database', config: { driver: 'sqlite', ...config } } });

  it("cannot read the gateway's own database: another organization's key hashes stay out of reach", async () => {
    // The attack of the report: point an integration at <data dir>/flowgate.sqlite and select the key hashes.
    for (const p of [ownDb, 'gateway.sqlite', 'data/flowgate.sqlite', path.join(dir, 'gateway.sqlite'), `../${path.relative(path.dirname(dir), ownDb)}`]) {
      const res = await create(hostile, { path: p });
      expect(res.status, p).toBe(400);
      expect(res.body.code).toBe('invalid_input');
      expect(res.body.issues.map((i: { path: string }) => i.path)).toEqual(['config.path']);
      expect(JSON.stringify(res.body)).not.toContain(ownerKeyHash);
    }

    // A file that was fine when saved and is swapped for a link to the gateway's database later: the run checks again.
    fs.copyFileSync(path.join(dir, 'shop.sqlite'), path.join(dir, 'swap.sqlite'));
    const created = await create(hostile, { path: 'swap.sqlite' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    fs.rmSync(path.join(dir, 'swap.sqlite'));
    fs.symlinkSync(ownDb, path.join(dir, 'swap.sqlite'));
    const run = await runQuery(hostile, created.body.id, 'select key_hash, organization_id from api_keys');
    expect(run.status).toBe('error');
    expect(run.error).toContain('No SQLite database this gateway may open at this path');
    expect(JSON.stringify(run)).not.toContain(ownerKeyHash);
    const logs = await hostile(`/api/workflows/executions/${run.executionId}/logs`);
    expect(logs.status).toBe(200);
    expect(JSON.stringify(logs.body)).not.toContain(ownerKeyHash);
  });

  it('answers the same for a missing file, a text file, a directory, a link out and a path outside', async () => {
    const answers = new Set<string>();
    for (const p of [
      'missing.sqlite',
      'notes.txt',
      'sub',
      '.',
      'elsewhere.sqlite',
      outsideDb,
      `../${path.basename(path.dirname(outsideDb))}/outside.sqlite`,
      '/etc/passwd',
    ]) {
      const res = await create(owner, { path: p });
      expect(res.status, p).toBe(400);
      answers.add(JSON.stringify(res.body));
    }
    expect([...answers]).toHaveLength(1);
    expect([...answers][0]).toContain('FLOWGATE_SQLITE_INTEGRATION_DIR');
    // A NUL byte is refused from the input alone, before any path is looked at (so it tells nothing about files).
    const nul = await create(owner, { path: 'x\0y' });
    expect(nul.status).toBe(400);
    expect(nul.body.issues).toMatchObject([{ path: 'config.path', code: 'nul_character' }]);

    // The test endpoint, with the path as a temporary override, answers the same for each as well.
    const ok = await create(owner, { path: 'shop.sqlite' });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    const passed = await owner(`/api/integrations/${ok.body.id}/test`, { method: 'POST', json: {} });
    expect(passed.status, JSON.stringify(passed.body)).toBe(200);
    expect(passed.body.status).toBe('success');
    const tested = new Set<string>();
    for (const p of ['missing.sqlite', 'notes.txt', 'sub', 'elsewhere.sqlite', outsideDb, ownDb, '../x.sqlite']) {
      const res = await owner(`/api/integrations/${ok.body.id}/test`, { method: 'POST', json: { configOverrides: { path: p } } });
      expect(res.status, p).toBe(400);
      expect(res.body.code).toBe('integration_test_failed');
      tested.add(JSON.stringify(res.body));
    }
    expect([...tested]).toHaveLength(1);

    // PUT checks the path too.
    const moved = await owner(`/api/integrations/${ok.body.id}`, { method: 'PUT', json: { config: { path: ownDb } } });
    expect(moved.status).toBe(400);
    expect(moved.body.code).toBe('invalid_input');
  });

  it('refuses ATTACH, DETACH, VACUUM, PRAGMA, load_extension and writes on a read-only integration', async () => {
    const created = await create(owner, { path: 'shop.sqlite' });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const vacuumTarget = path.join(tempDir(), 'copy.sqlite');

    const read = await runQuery(owner, id, 'select body from notes');
    expect(read.status, read.error).toBe('success');
    expect(read.output.result.rows).toEqual([{ body: 'hello' }]);

    for (const q of [
      `ATTACH DATABASE '${ownDb}' AS g`,
      `/* hidden */ attach '${ownDb}' as g`,
      `-- line\n  ATTACH '${ownDb}' AS g`,
      'DETACH DATABASE main',
      `VACUUM INTO '${vacuumTarget}'`,
      'PRAGMA writable_schema=1',
      'PRAGMA journal_mode=delete',
      "select load_extension('/tmp/evil')",
      "select load_extension('/tmp/evil', 'entry')",
      "select hex(fts3_tokenizer('simple'))",
      `select 1; ATTACH '${ownDb}' AS g`,
      "insert into notes (body) values ('written')",
      'delete from notes',
      'create table t (x)',
      'explain select 1',
      "with x as (select 'w' as b) insert into notes (body) select b from x",
      'with x as (select 1) delete from notes',
    ]) {
      const run = await runQuery(owner, id, q);
      expect(run.status, q).toBe('error');
      expect(run.error, q).toMatch(
        /do not run on SQLite integrations|need a writable SQLite integration|is read-only|does not run on SQLite integrations|more than one statement/,
      );
      expect(JSON.stringify(run), q).not.toContain(ownerKeyHash);
    }
    expect(fs.existsSync(vacuumTarget)).toBe(false);
    const db = new SQLite(path.join(dir, 'shop.sqlite'), { readonly: true });
    expect(db.prepare('select body from notes').all()).toEqual([{ body: 'hello' }]);
    db.close();
  });

  it('writes only with allowWrites, which still refuses ATTACH and VACUUM', async () => {
    makeDb(path.join(dir, 'rw.sqlite'));
    const created = await create(owner, { path: 'rw.sqlite', allowWrites: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.config).toEqual({ driver: 'sqlite', path: 'rw.sqlite', allowWrites: true });
    const insert = await runQuery(owner, created.body.id, "insert into notes (body) values ('written')");
    expect(insert.status, insert.error).toBe('success');
    expect(insert.output.result.rowCount).toBe(1);

    const vacuumTarget = path.join(tempDir(), 'copy.sqlite');
    for (const q of [`ATTACH DATABASE '${ownDb}' AS g`, `VACUUM INTO '${vacuumTarget}'`, 'PRAGMA writable_schema=1', "select load_extension('/tmp/evil')"]) {
      const run = await runQuery(owner, created.body.id, q);
      expect(run.status, q).toBe('error');
    }
    expect(fs.existsSync(vacuumTarget)).toBe(false);
    const db = new SQLite(path.join(dir, 'rw.sqlite'), { readonly: true });
    expect(db.prepare('select count(*) as n from notes').get()).toEqual({ n: 2 });
    db.close();
  });

  it('runs a slow query without stalling the gateway, and stops an endless one when the run is cancelled', async () => {
    const created = await create(hostile, { path: 'shop.sqlite' });
    expect(created.status).toBe(201);
    const counting = (limit: string) => `with recursive c(x) as (select 1 union all select x + 1 from c${limit}) select count(*) as n from c`;

    // A few seconds of SQLite work: other tenants' requests still answer at once.
    const slow = runQuery(hostile, created.body.id, counting(' where x < 5000000'));
    // The gateway runs in this process: a query on its thread would hold this timer as well.
    await expect.poll(() => queryProcesses().length, { timeout: 5000, interval: 50 }).toBe(1);
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const other = await owner('/api/integrations');
    expect(other.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1200);
    const done = await slow;
    expect(done.status, done.error).toBe('success');
    expect(done.output.result.rows).toEqual([{ n: 5000000 }]);

    // No end at all: cancelling the run kills the query's process.
    const workflow = await hostile('/api/workflows/create', {
      method: 'POST',
      json: {
        name: 'Endless',
        nodes: [
          { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
          {
            id: 'q',
            type: 'action',
            data: { label: 'Query', config: { actionType: 'Database Query', integrationId: created.body.id, dbQuery: counting('') } },
          },
        ],
        edges: [{ source: 't', target: 'q' }],
      },
    });
    const run = await hostile(`/api/workflows/${workflow.body.id}/execute`, { method: 'POST', json: { input: {} } });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(queryProcesses().length).toBe(1);
    expect((await hostile(`/api/workflows/executions/${run.body.executionId}/cancel`, { method: 'POST', json: {} })).status).toBe(200);
    const ended = (await hostile(`/api/workflows/executions/${run.body.executionId}/wait`)).body;
    expect(ended.status).toBe('cancelled');
    await expect.poll(() => queryProcesses().length, { timeout: 5000 }).toBe(0);
  }, 60_000);

  it('is off unless the operator sets a directory, which may not be the data directory', async () => {
    const off = await startTestGateway();
    try {
      const res = await fetchJson(`${off.url}/api/integrations`, {
        key: off.ownerKey,
        method: 'POST',
        body: JSON.stringify({ name: 'own', type: 'database', config: { driver: 'sqlite', path: path.join(off.dataDir, 'flowgate.sqlite') } }),
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_input');
      expect(res.body.error).toContain('FLOWGATE_SQLITE_INTEGRATION_DIR');

      // A row saved before this check (or written by hand) still cannot run.
      const { organization } = await off.gateway.services.organizations.ensure('default');
      const id = 'legacy-sqlite';
      const now = new Date().toISOString();
      await off.gateway.services.store
        .insertInto('integrations')
        .values({
          id,
          organization_id: organization.id,
          name: 'legacy',
          type: 'database',
          is_managed: 0,
          config: JSON.stringify({ driver: 'sqlite', path: path.join(off.dataDir, 'flowgate.sqlite') }),
          credentials_encrypted: off.gateway.services.secrets.seal('{}', `integration:${id}`),
          created_at: now,
          updated_at: now,
        })
        .execute();
      const run = await runQuery(client(off, off.ownerKey), id, 'select key_hash from api_keys');
      expect(run.status).toBe('error');
      expect(run.error).toContain('FLOWGATE_SQLITE_INTEGRATION_DIR');
      expect(JSON.stringify(run)).not.toContain(sha256(off.ownerKey));
    } finally {
      await off.close();
    }

    // The data directory inside the allowed one: still out of reach.
    const outer = tempDir();
    const nested = await startTestGateway({ dataDir: path.join(outer, 'data'), env: { FLOWGATE_SQLITE_INTEGRATION_DIR: outer } });
    try {
      const res = await fetchJson(`${nested.url}/api/integrations`, {
        key: nested.ownerKey,
        method: 'POST',
        body: JSON.stringify({ name: 'own', type: 'database', config: { driver: 'sqlite', path: 'data/flowgate.sqlite' } }),
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toContain('No SQLite database this gateway may open at this path');
    } finally {
      await nested.close();
    }

    const data = tempDir();
    expect(() => loadConfig({ FLOWGATE_DATA_DIR: data, FLOWGATE_SQLITE_INTEGRATION_DIR: data })).toThrow(ConfigError);
    fs.mkdirSync(path.join(data, 'inner'));
    expect(() => loadConfig({ FLOWGATE_DATA_DIR: data, FLOWGATE_SQLITE_INTEGRATION_DIR: path.join(data, 'inner') })).toThrow(/FLOWGATE_SQLITE_INTEGRATION_DIR/);
    expect(() => loadConfig({ FLOWGATE_DATA_DIR: data, FLOWGATE_SQLITE_INTEGRATION_DIR: path.join(data, 'missing') })).toThrow(/existing directory/);
    expect(loadConfig({ FLOWGATE_DATA_DIR: data, FLOWGATE_SQLITE_INTEGRATION_DIR: dir }).sqliteIntegrationDir).toBe(dir);
    expect(() => loadConfig({ FLOWGATE_DATA_DIR: data, FLOWGATE_DATABASE_ALLOW_HOSTS: 'db.internal,10.1' })).toThrow(/FLOWGATE_DATABASE_ALLOW_HOSTS/);
  });
});

/** A TCP port that accepts and closes at once (an open port of some other service), counting connections. */
async function acceptAndClose(host = '127.0.0.1') {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('postgres database integrations and the egress policy', () => {
  let open: Awaited<ReturnType<typeof acceptAndClose>>;
  let closedPort: number;
  beforeAll(async () => {
    open = await acceptAndClose();
    closedPort = await freePort();
  });
  afterAll(async () => {
    await open?.close();
  });

  async function probe(gw: TestGateway, config: Record<string, unknown>) {
    const api = client(gw, gw.ownerKey);
    const created = await api('/api/integrations', {
      method: 'POST',
      json: { name: `pg ${Math.random()}`, type: 'database', config: { driver: 'postgres', ...config } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const test = await api(`/api/integrations/${created.body.id}/test`, { method: 'POST', json: {} });
    const run = await runQuery(api, created.body.id, 'select 1');
    return { test: { status: test.status, body: test.body }, run: { status: run.status, error: run.error } };
  }

  it('refuses loopback by default without connecting, in the test endpoint and the step', async () => {
    const gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
    try {
      const before = open.connections();
      const refused = await probe(gw, { host: '127.0.0.1', port: open.port, user: 'u', password: 'pw-refused-0001' });
      const viaName = await probe(gw, { host: 'localhost', port: open.port });
      const viaString = await probe(gw, { connectionString: `postgres://u:pw-string-0002@127.0.0.1:${open.port}/db` });
      expect(open.connections()).toBe(before);
      for (const answer of [refused, viaName, viaString]) {
        expect(answer.test.status).toBe(400);
        expect(answer.test.body.code).toBe('integration_test_failed');
        expect(answer.test.body.error).toContain('FLOWGATE_DATABASE_ALLOW_HOSTS');
        expect(answer.run.status).toBe('error');
        expect(answer.run.error).toContain('FLOWGATE_DATABASE_ALLOW_HOSTS');
        expect(JSON.stringify(answer)).not.toMatch(/pw-refused-0001|pw-string-0002|ECONNREFUSED|terminated/);
      }
    } finally {
      await gw.close();
    }
  });

  it('an allow-list entry with a port opens that port only: another service on the listed host is refused without connecting', async () => {
    const gw = await startTestGateway({
      env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_DATABASE_ALLOW_HOSTS: `127.0.0.1:${open.port === 5432 ? 5433 : 5432},localhost:1` },
    });
    try {
      const before = open.connections();
      for (const host of ['127.0.0.1', 'localhost']) {
        const answer = await probe(gw, { host, port: open.port, user: 'u', password: 'pw-port-0003' });
        expect(answer.test.status).toBe(400);
        expect(answer.test.body.error).toContain('FLOWGATE_DATABASE_ALLOW_HOSTS');
        expect(answer.run.error).toContain('FLOWGATE_DATABASE_ALLOW_HOSTS');
      }
      expect(open.connections()).toBe(before);
    } finally {
      await gw.close();
    }
  });

  it('takes a connection string only to a network host, without parameters naming files on the gateway', async () => {
    const gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_DATABASE_ALLOW_HOSTS: '127.0.0.1' } });
    try {
      const api = client(gw, gw.ownerKey);
      const create = (connectionString: string) =>
        api('/api/integrations', { method: 'POST', json: { name: `pg ${Math.random()}`, type: 'database', config: { driver: 'postgres', connectionString } } });
      // Before: pg read /dev/zero synchronously while building the client (the process grew ~170 MB/s), a FIFO froze it, and ENOENT told which paths exist.
      const refusals: [string, string][] = [
        [`postgres://u:pw@127.0.0.1:${open.port}/db?sslcert=/dev/zero`, 'parameter "sslcert" is not accepted'],
        [`postgres://u:pw@127.0.0.1:${open.port}/db?sslkey=/etc/passwd`, 'parameter "sslkey" is not accepted'],
        [`postgres://u:pw@127.0.0.1:${open.port}/db?sslmode=require&sslrootcert=/nonexistent`, 'parameter "sslrootcert" is not accepted'],
        ['postgres://u@localhost/db?host=/var/run/postgresql', 'parameter "host" is not accepted'],
        ['postgres://u@%2Fvar%2Frun%2Fpostgresql/db', 'must name a network host'],
        ['socket:/var/run/postgresql?db=x', 'must start with postgres://'],
        [`postgres://u:pw@127.0.0.1:${open.port}/db?sslmode=bogus`, 'sslmode must be one of'],
      ];
      for (const [connectionString, says] of refusals) {
        const res = await create(connectionString);
        expect(res.status, connectionString).toBe(400);
        expect(res.body.code).toBe('invalid_input');
        expect(res.body.error, connectionString).toContain(says);
        expect(res.body.issues[0].path).toBe('config.connectionString');
        expect(JSON.stringify(res.body)).not.toContain(':pw@');
      }
      const ok = await create(`postgres://u:pw@127.0.0.1:${open.port}/db?sslmode=disable&application_name=flowgate`);
      expect(ok.status, JSON.stringify(ok.body)).toBe(201);
      // The same rule for a test's override, and for a row saved before the rule (refused before pg reads anything).
      const before = open.connections();
      const override = await api(`/api/integrations/${ok.body.id}/test`, {
        method: 'POST',
        json: { configOverrides: { connectionString: `postgres://u:pw@127.0.0.1:${open.port}/db?sslcert=/dev/zero` } },
      });
      expect(override.status).toBe(400);
      expect(override.body.error).toContain('sslcert');
      const { services } = gw.gateway;
      const sealed = services.secrets.seal(
        JSON.stringify({ connectionString: `postgres://u:pw@127.0.0.1:${open.port}/db?sslcert=/dev/zero` }),
        `integration:${ok.body.id}`,
      );
      await services.store.updateTable('integrations').set({ credentials_encrypted: sealed }).where('id', '=', ok.body.id).execute();
      const stored = await api(`/api/integrations/${ok.body.id}/test`, { method: 'POST', json: {} });
      expect(stored.status).toBe(400);
      expect(stored.body.code).toBe('invalid_input');
      expect(stored.body.error).toContain('parameter "sslcert" is not accepted');
      const run = await runQuery(api, ok.body.id, 'select 1');
      expect(run.status).toBe('error');
      expect(run.error).toContain('sslcert');
      expect(open.connections()).toBe(before);
    } finally {
      await gw.close();
    }
  });

  it('gives one answer for an open port, a closed port and a refused host: no port-scan oracle', async () => {
    const gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_DATABASE_ALLOW_HOSTS: '127.0.0.1' } });
    try {
      const before = open.connections();
      const openPort = await probe(gw, { host: '127.0.0.1', port: open.port });
      expect(open.connections()).toBeGreaterThan(before); // really connected: the allow list let it through
      const closed = await probe(gw, { host: '127.0.0.1', port: closedPort });
      const refused = await probe(gw, { host: '127.0.0.2', port: open.port });
      expect(openPort.test.status).toBe(400);
      expect(closed).toEqual(openPort);
      expect(refused).toEqual(openPort);
      expect(openPort.run.status).toBe('error');
    } finally {
      await gw.close();
    }
  });
});

describe('integration tests answer success only after contacting the provider', () => {
  let gw: TestGateway;
  let api: Api;
  let target: Awaited<ReturnType<typeof startHttpTarget>>;
  beforeAll(async () => {
    gw = await startTestGateway({ env: { FLOWGATE_HTTP_ALLOW_HOSTS: '127.0.0.1' } });
    api = client(gw, gw.ownerKey);
    target = await startHttpTarget();
  });
  afterAll(async () => {
    await target?.close();
    await gw?.close();
  });

  const create = async (type: string, config: Record<string, unknown>) => {
    const res = await api('/api/integrations', { method: 'POST', json: { name: `${type} ${Math.random()}`, type, config } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };

  it('answers untested only for a web3 address; every provider type is contacted, and fails when its host does not answer', async () => {
    const web3 = await create('web3', { address: '0xd8da6bf26964af9d7eed9e03e53415d37aa96045' });
    const untested = await api(`/api/integrations/${web3.id}/test`, { method: 'POST', json: {} });
    expect(untested.status).toBe(200);
    expect(untested.body.status).toBe('untested');
    expect(untested.body.message).toMatch(/^Not tested: /);

    // Before issue 16 these answered "untested" without contacting anything; now each calls its provider (here a closed port).
    const closed = `http://127.0.0.1:${await freePort()}`;
    const cases: [string, Record<string, unknown>][] = [
      ['telegram', { botToken: '123:abc', chatId: 1, apiBaseUrl: closed }],
      ['sendgrid', { apiKey: 'SG.key', apiBaseUrl: closed }],
      ['resend', { apiKey: 're_key', apiBaseUrl: closed }],
      ['safe', { apiKey: 'safe-key', apiBaseUrl: closed }],
      ['ai-gateway', { apiKey: 'ai-key', baseUrl: closed }],
      ['slack', { botToken: 'xoxb-token', apiBaseUrl: closed }],
    ];
    for (const [type, config] of cases) {
      const created = await create(type, config);
      const res = await api(`/api/integrations/${created.id}/test`, { method: 'POST', json: {} });
      expect(res.status, type).toBe(400);
      expect(res.body.code, type).toBe('integration_test_failed');
      expect(res.body.error, type).toContain('refused');
    }
    // Invalid config is still a 400 invalid_input, before anything is sent.
    const telegram = await create('telegram', { botToken: '123:abc' });
    const bad = await api(`/api/integrations/${telegram.id}/test`, { method: 'POST', json: { configOverrides: { chatId: { no: 1 } } } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
  });

  it('seals a generic webhook url and still delivers to it, also for rows saved before', async () => {
    const secretUrl = `${target.url}/hook/token-in-path-12345`;
    const created = await create('webhook', { url: secretUrl, method: 'PUT' });
    expect(created.config).toEqual({ method: 'PUT' });
    expect(created.configuredSecrets).toEqual(['url']);
    const row = await gw.gateway.services.store.selectFrom('integrations').select(['config']).where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.config).not.toContain('token-in-path-12345');
    const got = await api(`/api/integrations/${created.id}`);
    expect(JSON.stringify(got.body)).not.toContain('token-in-path-12345');
    const tested = await api(`/api/integrations/${created.id}/test`, { method: 'POST', json: {} });
    expect(tested.body.status, JSON.stringify(tested.body)).toBe('success');
    expect(target.hits.at(-1)).toMatchObject({ method: 'PUT', url: '/hook/token-in-path-12345' });
    expect(JSON.stringify(tested.body)).not.toContain('token-in-path-12345');

    // A row from before the url was a credential: plain JSON, nothing sealed.
    await gw.gateway.services.store
      .updateTable('integrations')
      .set({
        config: JSON.stringify({ url: secretUrl, method: 'POST' }),
        credentials_encrypted: gw.gateway.services.secrets.seal('{}', `integration:${created.id}`),
      })
      .where('id', '=', created.id)
      .execute();
    const legacy = await api(`/api/integrations/${created.id}`);
    expect(legacy.body.config).toEqual({ method: 'POST' });
    expect(legacy.body.configuredSecrets).toEqual(['url']);
    const list = await api('/api/integrations?type=webhook');
    expect(JSON.stringify(list.body)).not.toContain('token-in-path-12345');
    const hits = target.hits.length;
    expect((await api(`/api/integrations/${created.id}/test`, { method: 'POST', json: {} })).body.status).toBe('success');
    expect(target.hits.length).toBe(hits + 1);
    // The next config update moves it under the seal.
    const updated = await api(`/api/integrations/${created.id}`, { method: 'PUT', json: { config: { method: 'PATCH' } } });
    expect(updated.status).toBe(200);
    expect(updated.body.config).toEqual({ method: 'PATCH' });
    const after = await gw.gateway.services.store.selectFrom('integrations').select(['config']).where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(after.config).not.toContain('token-in-path-12345');
  });
});
