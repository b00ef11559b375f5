import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.ts';

/**
 * Migration 028's covering index held the public list's columns, but not in
 * its order (featured first, then `featured_order` with unset last, then the
 * newest published): every page of the public list, and each of the pages
 * search reads its summaries in, sorted every public workflow again in a
 * temporary B-tree. With 5,000 public workflows that was 35 of search's
 * 65 ms rebuild after any public edit. This index is in the list's own order
 * (the expression is the one publicWorkflowsQuery orders by), so a page only
 * skips index entries. PostgreSQL has no such index (028 says why).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) return;
  await sql
    .raw(
      `create index workflows_public_order on workflows (visibility, featured desc, coalesce(featured_order, 2147483647), published_at desc, id,
        organization_id, name, description, featured_category, featured_protocol, updated_at)`,
    )
    .execute(db);
  await db.schema.dropIndex('workflows_public_summary').execute();
}
