import { afterAll, beforeAll, expect, test } from 'vitest';
import { sql } from 'kysely';
import { migrate, type Store } from '../src/store/db.ts';
import { versioned } from '../src/store/versioned.ts';
import { openTestStore } from './helpers/gateway.ts';

// The caches every anonymous client reads (search, listings, public tags) rebuild when a tenant's edit moves
// their counter; a costly rebuild is spaced so that one tenant's stream of edits cannot keep the process busy.

let store: Store;
beforeAll(async () => {
  store = await openTestStore();
  await migrate(store);
});
afterAll(async () => store?.destroy());

const bump = () =>
  sql`insert into public_tags_version (id, version) values (1, 1) on conflict (id) do update set version = public_tags_version.version + 1`.execute(store);

/** Spends `ms` of this process's CPU, as a rebuild over many rows does. */
function burn(ms: number) {
  const cpu = () => process.cpuUsage().user / 1000;
  const start = cpu();
  while (cpu() - start < ms);
}

test('a cheap rebuild shows every change on the next call', async () => {
  let reads = 0;
  const kept = versioned('public_tags_version', async () => ++reads);
  expect((await kept(store)).value).toBe(1);
  expect((await kept(store)).value).toBe(1);
  for (let change = 2; change <= 4; change++) {
    await bump();
    expect((await kept(store)).value).toBe(change);
  }
});

test('after a costly rebuild, edits in quick succession cost one more rebuild, not one each, and the kept answer is served meanwhile', async () => {
  let reads = 0;
  const kept = versioned('public_tags_version', async () => {
    burn(40);
    return ++reads;
  });
  const first = await kept(store);
  expect(first.value).toBe(1);
  // Edits land right after: the answer kept is served (with its own version, so ETags stay right) and nothing is read.
  for (let i = 0; i < 5; i++) {
    await bump();
    const answer = await kept(store);
    expect(answer).toMatchObject({ version: first.version, value: 1 });
  }
  expect(reads).toBe(1);
  // Once the spacing has passed, the next call reads the rows again, once, and has every edit.
  const current = Number((await sql<{ version: number }>`select version from public_tags_version`.execute(store)).rows[0]!.version);
  let answer = await kept(store);
  for (const deadline = Date.now() + 5_000; answer.value === 1 && Date.now() < deadline; answer = await kept(store)) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(answer).toMatchObject({ version: current, value: 2 });
  expect(reads).toBe(2);
});

test('a small set is rebuilt at every change however long its rebuild took (on a busy machine a small read can look costly)', async () => {
  let reads = 0;
  const kept = versioned(
    'public_tags_version',
    async () => {
      burn(40);
      return Array.from({ length: 3 }, () => ++reads);
    },
    (items) => items.length,
  );
  const first = await kept(store);
  for (let change = 1; change <= 3; change++) {
    await bump();
    expect((await kept(store)).version).toBe(first.version + change);
  }
  expect(reads).toBe(12);
});
