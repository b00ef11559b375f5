import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { groupCommit } from '../src/store/group-commit.ts';
import { openSqliteStore } from '../src/store/db.ts';
import { tempDir } from './helpers/gateway.ts';
import path from 'node:path';

/** Writes queued in one turn share a commit, yet each succeeds or fails on its own. */

async function store() {
  const db = openSqliteStore(path.join(tempDir(), 'group.sqlite'));
  await sql`create table t (id text primary key)`.execute(db);
  return db;
}
const insert = (id: string) => (trx: Parameters<Parameters<typeof groupCommit>[1]>[0]) => sql`insert into t (id) values (${id})`.execute(trx).then(() => id);
const ids = async (db: Awaited<ReturnType<typeof store>>) => (await sql<{ id: string }>`select id from t order by id`.execute(db)).rows.map((r) => r.id);

describe('group commit', () => {
  it('commits the writes of one turn together, each settling with its own result', async () => {
    const db = await store();
    expect(await Promise.all([groupCommit(db, insert('a')), groupCommit(db, insert('b')), groupCommit(db, insert('c'))])).toEqual(['a', 'b', 'c']);
    expect(await ids(db)).toEqual(['a', 'b', 'c']);
    await db.destroy();
  });

  it('a failing write fails alone: the others of its group are committed', async () => {
    const db = await store();
    await groupCommit(db, insert('taken'));
    const results = await Promise.allSettled([groupCommit(db, insert('x')), groupCommit(db, insert('taken')), groupCommit(db, insert('y'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(await ids(db)).toEqual(['taken', 'x', 'y']);
    await db.destroy();
  });
});
