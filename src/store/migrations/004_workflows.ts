import type { Kysely } from 'kysely';

/**
 * Workflows and what organizes them (tags, projects, public tags), the
 * execution history that guards deletion, and user (`wfb_`) webhook keys.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('color', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('projects_organization').on('projects').column('organization_id').execute();

  await db.schema
    .createTable('tags')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('color', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tags_organization_name').on('tags').columns(['organization_id', 'name']).unique().execute();

  await db.schema
    .createTable('public_tags')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('created_by_organization_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('workflows')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // Null for an anonymous workflow that has not been claimed yet.
    .addColumn('organization_id', 'text', (c) => c.references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('visibility', 'text', (c) => c.notNull().defaultTo('private'))
    .addColumn('nodes', 'text', (c) => c.notNull())
    .addColumn('edges', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('set null'))
    .addColumn('tag_id', 'text', (c) => c.references('tags.id').onDelete('set null'))
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    /** SHA-256 of the claim token handed to an anonymous creator; only its holder may claim. */
    .addColumn('claim_token_hash', 'text')
    .addColumn('featured', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('featured_category', 'text')
    .addColumn('featured_protocol', 'text')
    .addColumn('featured_order', 'integer')
    .addColumn('published_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('workflows_organization_created').on('workflows').columns(['organization_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('workflows_visibility').on('workflows').column('visibility').execute();

  await db.schema
    .createTable('workflow_public_tags')
    .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
    .addColumn('public_tag_id', 'text', (c) => c.notNull().references('public_tags.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('workflow_public_tags_pk', ['workflow_id', 'public_tag_id'])
    .execute();

  await db.schema
    .createTable('workflow_executions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text')
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .execute();
  await db.schema.createIndex('workflow_executions_workflow').on('workflow_executions').columns(['workflow_id', 'created_at']).execute();

  await db.schema
    .createTable('workflow_execution_logs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('execution_id', 'text', (c) => c.notNull().references('workflow_executions.id').onDelete('cascade'))
    .addColumn('node_id', 'text', (c) => c.notNull())
    .addColumn('node_name', 'text')
    .addColumn('node_type', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text')
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('duration_ms', 'integer')
    .execute();
  await db.schema.createIndex('workflow_execution_logs_execution').on('workflow_execution_logs').column('execution_id').execute();

  await db.schema
    .createTable('user_api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute();
}
