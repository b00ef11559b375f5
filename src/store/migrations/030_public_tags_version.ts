import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * A counter that every change to what GET /api/public-tags answers moves,
 * kept by triggers as migration 029 keeps the listings' one: the tags
 * themselves, the links between tags and workflows (a workflow or
 * organization deleted with its links by cascade included), and a workflow's
 * visibility (each tag's count is of public workflows). Every anonymous client
 * may read the whole shared vocabulary, so the gateway keeps it while the
 * counter stands still (src/org/public-tags.ts). No row is inserted: a missing
 * row reads as version 0.
 */
const BUMP = `insert into public_tags_version (id, version) values (1, 1) on conflict (id) do update set version = public_tags_version.version + 1`;

const WATCHED = [
  { table: 'public_tags', events: ['insert', 'update', 'delete'] },
  { table: 'workflow_public_tags', events: ['insert', 'update', 'delete'] },
  { table: 'workflows', events: ['update of visibility'] },
];

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('public_tags_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .execute();
  if (isPostgres(db)) {
    // One bump per statement, whatever number of rows it changed.
    await sql.raw(`create function public_tags_changed() returns trigger language plpgsql as $$ begin ${BUMP}; return null; end $$`).execute(db);
    for (const { table, events } of WATCHED) {
      await sql
        .raw(`create trigger ${table}_tags_changed after ${events.join(' or ')} on ${table} for each statement execute function public_tags_changed()`)
        .execute(db);
    }
    return;
  }
  for (const { table, events } of WATCHED) {
    for (const event of events) {
      await sql.raw(`create trigger ${table}_tags_${event.split(' ')[0]} after ${event} on ${table} begin ${BUMP}; end`).execute(db);
    }
  }
}
