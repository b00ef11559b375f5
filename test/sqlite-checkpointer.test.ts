import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite, type SqliteHandle } from '../src/store/db.ts';
import { checkpointInBackground, type Checkpointer } from '../src/store/checkpointer.ts';
import { tempDir } from './helpers/gateway.ts';

/**
 * The gateway's SQLite connection never checkpoints inside a commit: a worker
 * thread with its own connection does, so a commit never stalls the event loop
 * copying pages into the database file and syncing it.
 */

const autocheckpoint = (sqlite: SqliteHandle) => sqlite.pragma('wal_autocheckpoint', { simple: true });

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const open: { sqlite: SqliteHandle; checkpointer?: Checkpointer }[] = [];
afterEach(async () => {
  for (const { sqlite, checkpointer } of open.splice(0)) {
    await checkpointer?.close();
    if (sqlite.open) sqlite.close();
  }
});

function database() {
  const file = path.join(tempDir('flowgate-checkpoint-'), 'flowgate.sqlite');
  const sqlite = openSqlite(file);
  sqlite.exec('create table blobs (id integer primary key, body blob not null)');
  const entry: (typeof open)[number] = { sqlite };
  open.push(entry);
  return { file, sqlite, entry };
}

function rowsSeenByAnotherConnection(file: string): number {
  const other = openSqlite(file);
  try {
    return (other.prepare('select count(*) as n from blobs').get() as { n: number }).n;
  } finally {
    other.close();
  }
}

/** 600 commits of 4 KB each: well past SQLite's own 1,000-page checkpoint threshold in WAL frames. */
function writeMany(sqlite: SqliteHandle, from = 0) {
  const insert = sqlite.prepare('insert into blobs (id, body) values (?, ?)');
  for (let i = 0; i < 600; i++) insert.run(from + i, Buffer.alloc(4096, i % 251));
}

describe('SQLite checkpoints off the event loop', () => {
  it('turns the connection’s own checkpoints off once the worker is up, and the worker moves committed pages into the database file', async () => {
    const { file, sqlite, entry } = database();
    expect(autocheckpoint(sqlite)).toBe(1000); // SQLite's default until the worker is ready
    entry.checkpointer = checkpointInBackground(sqlite, { intervalMs: 50, startAfterChanges: 0 });
    await until(() => autocheckpoint(sqlite) === 0, 'the checkpoint worker to take over');

    const before = fs.statSync(file).size;
    writeMany(sqlite);
    // Only the worker checkpoints now: the database file grows by the rows committed to the WAL.
    await until(() => fs.statSync(file).size >= before + 600 * 4096, 'the worker to checkpoint the WAL');
    expect(rowsSeenByAnotherConnection(file)).toBe(600);
  });

  it('starts no thread while the gateway writes little, and takes over once it has changed 1,000 rows', async () => {
    const { sqlite, entry } = database();
    entry.checkpointer = checkpointInBackground(sqlite, { intervalMs: 50 });
    const insert = sqlite.prepare('insert into blobs (id, body) values (?, ?)');
    for (let i = 0; i < 900; i++) insert.run(i, Buffer.alloc(16));
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(autocheckpoint(sqlite)).toBe(1000);
    for (let i = 900; i < 1000; i++) insert.run(i, Buffer.alloc(16));
    await until(() => autocheckpoint(sqlite) === 0, 'the checkpoint worker to take over');
  });

  it('closes its own connection first, so closing the gateway’s connection checkpoints everything and removes the WAL', async () => {
    const { file, sqlite, entry } = database();
    entry.checkpointer = checkpointInBackground(sqlite, { intervalMs: 60_000, startAfterChanges: 0 });
    await until(() => autocheckpoint(sqlite) === 0, 'the checkpoint worker to take over');
    writeMany(sqlite);
    expect(fs.existsSync(`${file}-wal`)).toBe(true);
    await entry.checkpointer.close();
    sqlite.close();
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    expect(rowsSeenByAnotherConnection(file)).toBe(600);
  });

  it('gives the connection SQLite’s own checkpoints back when the worker cannot run', async () => {
    const { sqlite, entry } = database();
    entry.checkpointer = checkpointInBackground(sqlite, { driver: path.join(tempDir(), 'no-such-driver.js'), startAfterChanges: 0 });
    // The worker fails before it is ready: the connection never loses its checkpoints.
    await entry.checkpointer.close();
    expect(autocheckpoint(sqlite)).toBe(1000);
  });

  it('gives them back when a checkpoint fails after the worker took over', async () => {
    const { sqlite, entry } = database();
    // The real driver, whose checkpoints fail from the third on (as on a disk I/O error).
    const driver = path.join(tempDir(), 'failing-driver.cjs');
    fs.writeFileSync(
      driver,
      `const Database = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
let calls = 0;
module.exports = class extends Database {
  pragma(source, options) {
    if (source.startsWith('wal_checkpoint') && ++calls >= 3) throw new Error('disk I/O error');
    return super.pragma(source, options);
  }
};`,
    );
    entry.checkpointer = checkpointInBackground(sqlite, { intervalMs: 20, driver, startAfterChanges: 0 });
    await until(() => autocheckpoint(sqlite) === 0, 'the checkpoint worker to take over');
    await until(() => autocheckpoint(sqlite) === 1000, 'the connection to get its own checkpoints back');
    for (let round = 0; round < 3; round++) writeMany(sqlite, round * 600);
    // SQLite checkpointed inside those commits again: the WAL was started over and holds fewer than the 1,800 pages written.
    const [{ log }] = sqlite.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
    expect(log).toBeLessThan(1000);
  });
});
