import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { sql } from 'kysely';
import { openPostgresStore, type PostgresStore } from '../src/store/postgres.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';

/**
 * A server that ends a connection while a transaction holds it between two
 * statements (a restart, a failover, an administrator's pg_terminate_backend)
 * must not crash the process: an instance of a scale-out run did, with an
 * unhandled 'error' event on the held client, when its database restarted.
 */

let postgres: TestPostgres;
let opened: PostgresStore;

beforeAll(async () => {
  postgres = await startPostgres();
  opened = openPostgresStore(await postgres.createDatabase('dropped'));
}, 60_000);
afterAll(async () => {
  await opened?.store.destroy();
  await postgres?.destroy();
});

describe('a connection the server ends while a transaction holds it', () => {
  it('fails that transaction, and the store answers the next query on a fresh connection', async () => {
    const admin = new pg.Client({ connectionString: postgres.url() });
    await admin.connect();
    const crashes: unknown[] = [];
    const onUncaught = (error: unknown) => void crashes.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const held = opened.store.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        // Ended by the server while this transaction holds it, idle between statements.
        await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
        await new Promise((resolve) => setTimeout(resolve, 300));
        await sql`select 1`.execute(trx);
      });
      await expect(held).rejects.toThrow();
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(opened.store);
      expect(rows[0]!.one).toBe(1);
      expect(crashes).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      await admin.end();
    }
  });
});
