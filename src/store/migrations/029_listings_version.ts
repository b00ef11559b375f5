import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * A counter that every change to `workflow_listings` moves, kept by triggers
 * so no write path (publish, unlist, catalog sync, a workflow or organization
 * deleted with its listings by cascade) has to remember it. The documents
 * every anonymous client reads (/openapi.json, GET /api/mcp/workflows,
 * /.well-known/x402) name every listing in the deployment; the gateway keeps
 * what it built from them while the counter stands still
 * (src/catalog/listings.ts). A counter in the database, moved in the writer's
 * own transaction, is right for several PostgreSQL instances too, where
 * comparing timestamps written by different clocks is not.
 *
 * No row is inserted here: a missing row reads as version 0, and the first
 * change creates it (an empty migrated database stays empty, as
 * `flowgate db copy` requires of its target).
 */
const BUMP = `insert into listings_version (id, version) values (1, 1) on conflict (id) do update set version = listings_version.version + 1`;

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('listings_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .execute();
  if (isPostgres(db)) {
    // One bump per statement, whatever number of rows it changed.
    await sql.raw(`create function workflow_listings_changed() returns trigger language plpgsql as $$ begin ${BUMP}; return null; end $$`).execute(db);
    await sql
      .raw(
        `create trigger workflow_listings_changed after insert or update or delete on workflow_listings for each statement execute function workflow_listings_changed()`,
      )
      .execute(db);
    return;
  }
  for (const event of ['insert', 'update', 'delete']) {
    await sql.raw(`create trigger workflow_listings_${event} after ${event} on workflow_listings begin ${BUMP}; end`).execute(db);
  }
}
