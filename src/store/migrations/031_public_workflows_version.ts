import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * A counter that every change to what search answers moves (search_workflows, GET /api/workflows/search),
 * kept by triggers as migrations 029 and 030 keep theirs: a public workflow written, published, made
 * private or deleted (a private one's writes do not move it), a public tag, and the links between tags
 * and workflows. Search is anonymous and reads every tenant's public workflows, so the gateway keeps
 * their summaries while the counter stands still (src/engine/public-search.ts). No row is inserted: a
 * missing row reads as version 0.
 */
const BUMP = `insert into public_workflows_version (id, version) values (1, 1) on conflict (id) do update set version = public_workflows_version.version + 1`;

/** Writes of workflows that touch a public one: per row, with the condition on the row's visibility before or after. */
const WORKFLOW_EVENTS = [
  { event: 'insert', when: `new.visibility = 'public'` },
  { event: 'update', when: `old.visibility = 'public' or new.visibility = 'public'` },
  { event: 'delete', when: `old.visibility = 'public'` },
];
const TAG_TABLES = ['public_tags', 'workflow_public_tags'];

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('public_workflows_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .execute();
  if (isPostgres(db)) {
    await sql.raw(`create function public_workflows_changed() returns trigger language plpgsql as $$ begin ${BUMP}; return null; end $$`).execute(db);
    for (const { event, when } of WORKFLOW_EVENTS) {
      await sql
        .raw(`create trigger workflows_public_${event} after ${event} on workflows for each row when (${when}) execute function public_workflows_changed()`)
        .execute(db);
    }
    // One bump per statement, whatever number of rows it changed.
    for (const table of TAG_TABLES) {
      await sql
        .raw(
          `create trigger ${table}_search_changed after insert or update or delete on ${table} for each statement execute function public_workflows_changed()`,
        )
        .execute(db);
    }
    return;
  }
  for (const { event, when } of WORKFLOW_EVENTS) {
    await sql.raw(`create trigger workflows_public_${event} after ${event} on workflows when ${when} begin ${BUMP}; end`).execute(db);
  }
  for (const table of TAG_TABLES) {
    for (const event of ['insert', 'update', 'delete']) {
      await sql.raw(`create trigger ${table}_search_${event} after ${event} on ${table} begin ${BUMP}; end`).execute(db);
    }
  }
}
