import { newId, nowIso } from '../../src/ids.ts';
import type { TestGateway } from './gateway.ts';

/**
 * Rows written straight into the store, for tests of what organizes
 * workflows (tags, projects, public tags) independently of the workflow API.
 */

/** The organization behind `gw.createKey({org})` and its owner user (the userId of that org's keys). */
export async function orgIdentity(gw: TestGateway, org = 'default'): Promise<{ organizationId: string; userId: string }> {
  const { organization, owner } = await gw.gateway.services.organizations.ensure(org);
  return { organizationId: organization.id, userId: owner.id };
}

export interface WorkflowFixture {
  organizationId: string;
  userId: string | null;
  nodes?: unknown[];
  edges?: unknown[];
  name?: string;
  visibility?: 'private' | 'public';
  tagId?: string | null;
  projectId?: string | null;
  /** ISO time; default now. */
  createdAt?: string;
  publishedAt?: string | null;
}

/** Inserts a minimal workflow row and returns its id. */
export async function insertWorkflow(gw: TestGateway, fixture: WorkflowFixture): Promise<string> {
  const id = newId();
  const now = fixture.createdAt ?? nowIso();
  await gw.gateway.services.store
    .insertInto('workflows')
    .values({
      id,
      organization_id: fixture.organizationId,
      user_id: fixture.userId,
      name: fixture.name ?? `workflow ${id}`,
      description: null,
      visibility: fixture.visibility ?? 'private',
      nodes: JSON.stringify(fixture.nodes ?? []),
      edges: JSON.stringify(fixture.edges ?? []),
      project_id: fixture.projectId ?? null,
      tag_id: fixture.tagId ?? null,
      enabled: 1,
      claim_token_hash: null,
      featured: 0,
      featured_category: null,
      featured_protocol: null,
      featured_order: null,
      published_at: fixture.publishedAt ?? null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/** A workflow row's organizing columns, or undefined when it no longer exists. */
export const workflowRow = (gw: TestGateway, id: string) =>
  gw.gateway.services.store.selectFrom('workflows').select(['id', 'tag_id', 'project_id']).where('id', '=', id).executeTakeFirst();
