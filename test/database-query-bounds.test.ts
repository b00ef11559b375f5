import net from 'node:net';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDatabaseQuery } from './helpers/database-query.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';

/**
 * A Database Query's result is bounded on the gateway's side, in rows and in
 * size (the run data limit, FLOWGATE_RUN_DATA_LIMIT_BYTES, set to its lowest
 * here): the rows are taken as they arrive and the query stopped past the
 * bound, so a tenant's PostgreSQL (a real one, and one that ignores every
 * request of the client's) cannot fill the shared process, and a SQLite
 * child never sends an oversized result across.
 */

const RUN_DATA_LIMIT = 65_536;
const TOO_LARGE = /The query's result is larger than 0\.06 MiB of JSON, the most one step may hold \(FLOWGATE_RUN_DATA_LIMIT_BYTES\)/;

let gw: TestGateway;
let sqliteFile: string;
let postgres: TestPostgres;
let hostile: net.Server;
/** What the hostile server wrote before the gateway cut the connection (bytes), per connection. */
const hostileSent: number[] = [];

/**
 * A PostgreSQL server that answers any query with an oversized result, whatever the client asks (no
 * statement_timeout, no flow control but TCP's): the first word of the query says which, `rows` (20,000 rows of
 * 1 KB) or `huge` (one row of 100 MB, in pieces).
 */
function startHostileServer(): Promise<net.Server> {
  const message = (type: string, body: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(type, 0, 'latin1');
    head.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  };
  const int32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return b;
  };
  const int16 = (n: number) => {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n);
    return b;
  };
  const rowDescription = message('T', Buffer.concat([int16(1), Buffer.from('filler\0'), int32(0), int16(0), int32(25), int16(-1), int32(-1), int16(0)]));
  const row = (text: Buffer) => message('D', Buffer.concat([int16(1), int32(text.length), text]));
  const server = net.createServer((socket) => {
    const index = hostileSent.push(0) - 1;
    let started = false;
    let buffered = Buffer.alloc(0);
    socket.on('error', () => {});
    const send = (chunk: Buffer) => {
      hostileSent[index] += chunk.length;
      return socket.write(chunk);
    };
    // Writes `count` copies of `chunk` as fast as the socket takes them, then ends the result; stops when the client goes away.
    const pump = (chunk: Buffer, count: number) => {
      let left = count;
      const write = () => {
        while (left > 0 && !socket.destroyed) {
          left -= 1;
          if (!send(chunk)) return void socket.once('drain', write);
        }
        if (!socket.destroyed) send(Buffer.concat([message('C', Buffer.from('SELECT 1\0')), message('Z', Buffer.from('I'))]));
      };
      write();
    };
    socket.on('data', (data) => {
      buffered = Buffer.concat([buffered, data]);
      if (!started) {
        // The startup message (no type byte): trust anyone.
        if (buffered.length < 4 || buffered.length < buffered.readInt32BE(0)) return;
        buffered = buffered.subarray(buffered.readInt32BE(0));
        started = true;
        send(Buffer.concat([message('R', int32(0)), message('Z', Buffer.from('I'))]));
      }
      const at = buffered.indexOf('Q');
      if (at < 0 || buffered.length < at + 5) return;
      const query = buffered.subarray(at + 5).toString('utf8');
      buffered = Buffer.alloc(0);
      send(rowDescription);
      if (query.startsWith('rows')) {
        // 20,000 rows of 1 KB: 20 MB, twice the rows a query may return.
        pump(row(Buffer.alloc(1024, 'x')), 20_000);
      } else {
        // One DataRow of 100 MB, sent 64 KB at a time.
        const size = 100 * 1024 * 1024;
        send(Buffer.concat([Buffer.from('D'), int32(size + 10), int16(1), int32(size)]));
        pump(Buffer.alloc(65_536, 'y'), size / 65_536);
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  const sqliteDir = tempDir();
  gw = await startTestGateway({
    env: {
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_SQLITE_INTEGRATION_DIR: sqliteDir,
      FLOWGATE_DATABASE_ALLOW_HOSTS: '127.0.0.1',
      FLOWGATE_RUN_DATA_LIMIT_BYTES: String(RUN_DATA_LIMIT),
    },
  });
  sqliteFile = path.join(sqliteDir, 'big.sqlite');
  const db = new SQLite(sqliteFile);
  db.exec("create table notes (id integer primary key, body text); insert into notes (body) values ('short')");
  db.prepare('with recursive s(n) as (select 1 union all select n + 1 from s where n < 20) insert into notes (body) select ? from s').run('z'.repeat(10_000));
  db.close();

  postgres = await startPostgres();
  const client = new pg.Client({ connectionString: postgres.url() });
  await client.connect();
  await client.query("create table prices (symbol text primary key, usd numeric); insert into prices values ('ETH', 3000), ('BTC', 60000)");
  await client.end();
  hostile = await startHostileServer();
});
afterAll(async () => {
  await gw?.close();
  await postgres?.destroy();
  hostile?.close();
});

const api = (p: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${p}`, { key: gw.ownerKey, ...init });

async function integration(config: Record<string, unknown>) {
  const res = await api('/api/integrations', { method: 'POST', body: JSON.stringify({ name: `db ${Math.random()}`, type: 'database', config }) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

const postgresIntegration = () =>
  integration({ driver: 'postgres', host: '127.0.0.1', port: postgres.port, database: 'postgres', user: 'postgres', password: postgres.password });

async function runQuery(integrationId: string, dbQuery: string, input: Record<string, unknown> = {}) {
  return (await runDatabaseQuery(gw, integrationId, dbQuery, input)).done;
}

/** The gateway still answers, and still runs a query. */
async function expectResponsive(integrationId: string, query: string, rows: unknown[]) {
  const list = await api('/api/integrations');
  expect(list.status).toBe(200);
  const done = await runQuery(integrationId, query);
  expect(done.status, done.error).toBe('success');
  expect(done.output.result.rows).toEqual(rows);
}

describe('Database Query result bounds: PostgreSQL', () => {
  it('runs ordinary queries as before: rows, bound parameters, row counts of writes', async () => {
    const id = await postgresIntegration();
    const read = await runQuery(id, 'select symbol, usd::float as usd from prices where symbol = {{@t:Start.symbol}}', { symbol: 'BTC' });
    expect(read.status, read.error).toBe('success');
    expect(read.output.result).toEqual({ rows: [{ symbol: 'BTC', usd: 60000 }], rowCount: 1 });
    const all = await runQuery(id, 'select symbol from prices order by symbol');
    expect(all.output.result).toEqual({ rows: [{ symbol: 'BTC' }, { symbol: 'ETH' }], rowCount: 2 });
    const write = await runQuery(id, "update prices set usd = usd where symbol in ('ETH', 'BTC')");
    expect(write.status, write.error).toBe('success');
    expect(write.output.result).toEqual({ rows: [], rowCount: 2 });
  });

  it('stops a result of many rows past the size bound with an error that names it', async () => {
    const id = await postgresIntegration();
    const done = await runQuery(id, "select repeat('x', 10000) as filler from generate_series(1, 200)");
    expect(done.status).toBe('error');
    expect(done.error).toMatch(TOO_LARGE);
    await expectResponsive(id, "select 'still here' as answer", [{ answer: 'still here' }]);
  });

  it('cuts one row larger than the bound off before it is all read', async () => {
    const id = await postgresIntegration();
    const done = await runQuery(id, "select repeat('x', 40000000) as filler");
    expect(done.status).toBe('error');
    expect(done.error).toMatch(TOO_LARGE);
    await expectResponsive(id, 'select 1 as one', [{ one: 1 }]);
  });

  it('bounds a server that ignores the client: more rows than allowed, and one row of 100 MB', async () => {
    const id = await integration({ driver: 'postgres', host: '127.0.0.1', port: (hostile.address() as net.AddressInfo).port, user: 'x', database: 'x' });
    const rows = await runQuery(id, 'rows please');
    expect(rows.status).toBe('error');
    expect(rows.error).toMatch(TOO_LARGE);
    const huge = await runQuery(id, 'huge please');
    expect(huge.status).toBe('error');
    expect(huge.error).toMatch(TOO_LARGE);
    // The gateway hung up long before the 100 MB row was through (the socket buffers hold a few MB at most).
    expect(hostileSent.at(-1)).toBeLessThan(50 * 1024 * 1024);
    await expectResponsive(await postgresIntegration(), "select 'fine' as answer", [{ answer: 'fine' }]);
  });
});

describe('Database Query result bounds: SQLite', () => {
  it('answers small results as before and refuses a result past the bound in the query process', async () => {
    const id = await integration({ driver: 'sqlite', path: sqliteFile });
    const small = await runQuery(id, 'select body from notes where id = 1');
    expect(small.status, small.error).toBe('success');
    expect(small.output.result).toEqual({ rows: [{ body: 'short' }], rowCount: 1 });
    const big = await runQuery(id, 'select body from notes');
    expect(big.status).toBe('error');
    expect(big.error).toMatch(TOO_LARGE);
    await expectResponsive(id, 'select count(*) as n from notes', [{ n: 21 }]);
  });
});
