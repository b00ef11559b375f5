import type { Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * Search reads every public workflow's summary columns on each (anonymous)
 * request (src/engine/public-search.ts). On SQLite a row's columns are stored
 * in order, and the featured, published and updated columns come after the
 * graph: reading them walked the graph's overflow pages, about a millisecond
 * per megabyte of graph, on every search. This index holds every column search
 * reads, so SQLite answers from it alone, and it replaces the index on
 * visibility it starts with. PostgreSQL keeps large values out of line
 * (TOAST), so its rows are cheap to read as they are; and a B-tree entry there
 * is limited to about 2.7 kB, which a 2,000-character description in a
 * multi-byte script could pass, so it gets no such index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) return;
  await db.schema
    .createIndex('workflows_public_summary')
    .on('workflows')
    .columns([
      'visibility',
      'featured',
      'featured_order',
      'published_at',
      'id',
      'organization_id',
      'name',
      'description',
      'featured_category',
      'featured_protocol',
      'updated_at',
    ])
    .execute();
  await db.schema.dropIndex('workflows_visibility').execute();
}
