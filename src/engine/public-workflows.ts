import { sql } from 'kysely';
import type { Store } from '../store/db.ts';
import type { WorkflowsTable } from '../store/schema.ts';
import { readBoundedList } from './whole-list.ts';
import { ServiceError } from '../errors.ts';
import { assertRoom } from '../org/quotas.ts';
import { nowIso } from '../ids.ts';
import { isWriteAction } from '../actions/index.ts';
import { toWorkflowRecord, workflowNotFound, type WorkflowRecord } from './workflows.ts';
import type { WorkflowNode } from './graph.ts';
import { redact } from '../text/redact.ts';

/** Publishing: go-live, the public listing, featuring and search. */

export const MAX_PUBLIC_TAGS = 5;

export interface PublicTagRef {
  id: string;
  name: string;
  slug: string;
}

export interface WorkflowView extends WorkflowRecord {
  publicTags: PublicTagRef[];
  isOwner: boolean;
}

export async function publicTagsOf(store: Store, workflowIds: readonly string[]): Promise<Map<string, PublicTagRef[]>> {
  const byWorkflow = new Map<string, PublicTagRef[]>();
  if (workflowIds.length === 0) return byWorkflow;
  const rows = await store
    .selectFrom('workflow_public_tags')
    .innerJoin('public_tags', 'public_tags.id', 'workflow_public_tags.public_tag_id')
    .select(['workflow_public_tags.workflow_id', 'public_tags.id', 'public_tags.name', 'public_tags.slug'])
    .where('workflow_public_tags.workflow_id', 'in', workflowIds)
    .orderBy('public_tags.name')
    .execute();
  for (const row of rows) {
    const list = byWorkflow.get(row.workflow_id) ?? [];
    list.push({ id: row.id, name: row.name, slug: row.slug });
    byWorkflow.set(row.workflow_id, list);
  }
  return byWorkflow;
}

/**
 * A graph as anyone but its owner sees it: credentials typed into nodes
 * (headers, bodies, URL query and userinfo) hidden, as in execution logs.
 * `paths` names each hidden field, e.g. `nodes[id=http1].data.config.httpHeaders.Authorization`.
 */
export function publicGraph(nodes: readonly WorkflowNode[]): { nodes: WorkflowNode[]; paths: string[] } {
  const paths: string[] = [];
  const shown = nodes.map((node) => {
    const redacted = redact(node, `nodes[id=${node.id}]`);
    paths.push(...redacted.paths);
    return redacted.value;
  });
  return { nodes: shown, paths };
}

/** A workflow record with its graph as the public sees it. */
function asPublic<T extends WorkflowRecord>(record: T): T {
  // The owner's project and tag ids are its own filing, not part of what it published.
  return { ...record, projectId: null, tagId: null, nodes: publicGraph(record.nodes).nodes };
}

/**
 * One workflow as the caller may see it: any workflow of the caller's
 * organization, or a public one of another organization (read-only,
 * isOwner false, credentials redacted). Everything else is 404, exactly like a missing id.
 */
export async function viewWorkflow(store: Store, organizationId: string | null, workflowId: string): Promise<WorkflowView> {
  const row = await store.selectFrom('workflows').selectAll().where('id', '=', workflowId).executeTakeFirst();
  const own = row !== undefined && organizationId !== null && row.organization_id === organizationId;
  if (!row || (!own && (row.visibility !== 'public' || row.organization_id === null))) throw workflowNotFound(workflowId);
  const tags = await publicTagsOf(store, [row.id]);
  const record = toWorkflowRecord(row);
  return { ...(own ? record : asPublic(record)), publicTags: tags.get(row.id) ?? [], isOwner: own };
}

/** The owner's view after publishing, with the paths the public sees redacted. */
export async function goLive(
  store: Store,
  organizationId: string,
  workflowId: string,
  input: { name: string; publicTagIds: readonly string[]; /** Public workflows the organization may hold; unset: no bound. */ publicQuota?: number },
): Promise<WorkflowView & { redactedPaths: string[] }> {
  const tagIds = [...new Set(input.publicTagIds)];
  if (tagIds.length > MAX_PUBLIC_TAGS) {
    throw new ServiceError(400, 'invalid_input', `A published workflow may carry at most ${MAX_PUBLIC_TAGS} public tags; got ${tagIds.length}.`, {
      issues: [{ path: 'publicTagIds', message: `at most ${MAX_PUBLIC_TAGS}`, code: 'too_big' }],
    });
  }
  await store.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('workflows')
      .select(['id', 'published_at', 'visibility'])
      .where('id', '=', workflowId)
      .where('organization_id', '=', organizationId)
      .executeTakeFirst();
    if (!existing) throw workflowNotFound(workflowId);
    if (existing.visibility !== 'public') await assertRoom(trx, 'publicWorkflows', input.publicQuota, organizationId);
    if (tagIds.length > 0) {
      const found = await trx.selectFrom('public_tags').select('id').where('id', 'in', tagIds).execute();
      const missing = tagIds.filter((id) => !found.some((f) => f.id === id));
      if (missing.length > 0) {
        throw new ServiceError(
          400,
          'invalid_input',
          `Unknown public tag id(s): ${missing.join(', ')}. List them with GET /api/public-tags or create one with POST /api/public-tags.`,
          {
            issues: [{ path: 'publicTagIds', message: 'unknown public tag id', code: 'invalid_reference' }],
            unknownPublicTagIds: missing,
          },
        );
      }
    }
    const now = nowIso();
    await trx
      .updateTable('workflows')
      .set({ name: input.name, visibility: 'public', published_at: existing.published_at ?? now, updated_at: now })
      .where('id', '=', workflowId)
      .execute();
    await trx.deleteFrom('workflow_public_tags').where('workflow_id', '=', workflowId).execute();
    if (tagIds.length > 0) {
      await trx
        .insertInto('workflow_public_tags')
        .values(tagIds.map((public_tag_id) => ({ workflow_id: workflowId, public_tag_id })))
        .execute();
    }
  });
  const view = await viewWorkflow(store, organizationId, workflowId);
  return { ...view, redactedPaths: publicGraph(view.nodes).paths };
}

export interface PublicListFilters {
  workflowId?: string;
  featured?: boolean;
  featuredProtocol?: string;
  tag?: string;
  /** Omitted: the whole list (refused past MAX_WHOLE_LIST_CHARS of graphs: whole-list.ts). */
  limit?: number;
  offset?: number;
}

export interface PublicWorkflow extends WorkflowRecord {
  publicTags: PublicTagRef[];
  featured: boolean;
  featuredCategory: string | null;
  featuredProtocol: string | null;
  featuredOrder: number | null;
  publishedAt: string | null;
}

/** The public workflows a filter selects, in the list's order (featured first, then newest published), with no columns chosen yet. */
export function publicWorkflowsQuery(store: Store, filters: Omit<PublicListFilters, 'limit' | 'offset'> = {}) {
  let query = store.selectFrom('workflows').where('workflows.visibility', '=', 'public').where('workflows.organization_id', 'is not', null);
  if (filters.workflowId !== undefined) query = query.where('workflows.id', '=', filters.workflowId);
  if (filters.featured !== undefined) query = query.where('workflows.featured', '=', filters.featured ? 1 : 0);
  if (filters.featuredProtocol) query = query.where(sql<string>`lower(workflows.featured_protocol)`, '=', filters.featuredProtocol.toLowerCase());
  if (filters.tag) {
    const slug = filters.tag.toLowerCase();
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('workflow_public_tags')
          .innerJoin('public_tags', 'public_tags.id', 'workflow_public_tags.public_tag_id')
          .select('workflow_public_tags.workflow_id')
          .whereRef('workflow_public_tags.workflow_id', '=', 'workflows.id')
          .where('public_tags.slug', '=', slug),
      ),
    );
  }
  return query
    .orderBy('workflows.featured', 'desc')
    .orderBy(sql`coalesce(workflows.featured_order, 2147483647)`)
    .orderBy('workflows.published_at', 'desc')
    .orderBy('workflows.id');
}

export async function listPublicWorkflows(store: Store, filters: PublicListFilters = {}): Promise<PublicWorkflow[]> {
  return (await readPublicWorkflows(store, filters)).list;
}

/** The list and the characters of graph it was built from (what keeping it costs: public-list-cache.ts). */
export async function readPublicWorkflows(store: Store, filters: PublicListFilters): Promise<{ list: PublicWorkflow[]; chars: number }> {
  const ordered = publicWorkflowsQuery(store, filters).selectAll('workflows');
  // Reads by offset (the order has no single key to seek by); a workflow published meanwhile may repeat one, dropped here.
  let offset = filters.offset ?? 0;
  const seen = new Set<string>();
  const rows = (
    await readBoundedList<WorkflowsTable>(
      async (limit) => {
        const batch = await ordered.limit(limit).offset(offset).execute();
        offset += batch.length;
        return batch;
      },
      (row) => row.nodes.length + row.edges.length,
      { what: 'The public workflows', example: 'GET /api/workflows/public?limit=200&offset=0', limit: filters.limit },
    )
  ).filter((row) => !seen.has(row.id) && seen.add(row.id));
  const tags = await publicTagsOf(
    store,
    rows.map((r) => r.id),
  );
  const chars = rows.reduce((sum, row) => sum + row.nodes.length + row.edges.length, 0);
  const list = rows.map((row) => ({
    ...asPublic(toWorkflowRecord(row)),
    publicTags: tags.get(row.id) ?? [],
    featured: row.featured === 1,
    featuredCategory: row.featured_category,
    featuredProtocol: row.featured_protocol,
    featuredOrder: row.featured_order,
    publishedAt: row.published_at,
  }));
  return { list, chars };
}

export async function markFeatured(
  store: Store,
  input: { workflowId: string; category?: string; protocol?: string; featuredOrder?: number },
): Promise<PublicWorkflow> {
  const result = await store
    .updateTable('workflows')
    .set({
      featured: 1,
      featured_category: input.category ?? null,
      featured_protocol: input.protocol ?? null,
      featured_order: input.featuredOrder ?? null,
      updated_at: nowIso(),
    })
    .where('id', '=', input.workflowId)
    .where('visibility', '=', 'public')
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) {
    throw new ServiceError(404, 'not_found', `No public workflow ${input.workflowId}; only published workflows can be featured.`);
  }
  const [featured] = await listPublicWorkflows(store, { workflowId: input.workflowId });
  return featured!;
}

/** The chains a workflow touches (its nodes' `network` fields) and whether it sends transactions. */
export function describeGraph(nodes: readonly WorkflowNode[]): { networks: string[]; workflowType: 'read' | 'write' } {
  const networks = new Set<string>();
  let writes = false;
  for (const node of nodes) {
    const config = node.data?.config ?? {};
    if (typeof config.network === 'string' && config.network) networks.add(config.network);
    if (typeof config.actionType === 'string' && isWriteAction(config.actionType)) writes = true;
  }
  return { networks: [...networks], workflowType: writes ? 'write' : 'read' };
}
