import { isPostgres } from '../store/dialect.ts';
import type { Transaction } from 'kysely';
import type { Store } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { ServiceError } from '../errors.ts';
import { assertRoom } from '../org/quotas.ts';
import { newId, nowIso } from '../ids.ts';
import { GRAPH_LIMITS, type WorkflowGraph } from './graph.ts';
import { matchSecret } from '../auth/secret-keys.ts';
import { getWorkflow, toWorkflowRecord, workflowNotFound, type WorkflowRecord } from './workflows.ts';

/**
 * Creating, changing and removing workflows. Graphs arrive here already
 * normalized and validated (assertValidGraph); each write is one transaction,
 * so a refused request never leaves a partial record.
 */

type Db = Store | Transaction<Database>;

export interface WorkflowOwner {
  organizationId: string;
  userId: string;
  /** How many workflows the organization may hold (FLOWGATE_MAX_WORKFLOWS_PER_ORG); unset: no bound (the catalog's own organization). */
  maxWorkflows?: number;
}

/** A new workflow must fit the organization's bound: each is up to a request body of stored graph. */
const assertWorkflowRoom = (db: Db, owner: WorkflowOwner) => assertRoom(db, 'workflows', owner.maxWorkflows, owner.organizationId);

/** projectId / tagId must name a project or tag of the same organization. */
async function assertReference(db: Db, table: 'projects' | 'tags', field: 'projectId' | 'tagId', organizationId: string, id: string | null | undefined) {
  if (id === undefined || id === null) return;
  const row = await db.selectFrom(table).select('id').where('id', '=', id).where('organization_id', '=', organizationId).executeTakeFirst();
  if (!row) {
    const lister = table === 'projects' ? 'list_projects (GET /api/projects)' : 'list_tags (GET /api/tags)';
    throw new ServiceError(
      400,
      'invalid_input',
      `${field} "${id}" does not name a ${table === 'projects' ? 'project' : 'tag'} of this organization; see ${lister}.`,
      {
        issues: [{ path: field, message: 'unknown id', code: 'invalid_reference' }],
      },
    );
  }
}

export interface NewWorkflow {
  name: string;
  description?: string | null;
  graph: WorkflowGraph;
  projectId?: string | null;
  tagId?: string | null;
  enabled?: boolean;
}

/** Seconds a creator refused by the deployment's bound on unclaimed workflows is told to wait: the hourly sweep makes room. */
const UNCLAIMED_RETRY_AFTER_SECONDS = 3600;

/**
 * Unclaimed anonymous workflows are bounded across the whole deployment (FLOWGATE_MAX_UNCLAIMED_WORKFLOWS): the per-IP limit
 * alone let anyone with many addresses store a request body each, for their retention days, in the database every tenant shares.
 */
async function assertUnclaimedRoom(db: Db, max: number | undefined) {
  if (max === undefined) return;
  // The max-th unowned row, read from the organization index: no count of the whole set.
  const full = await db
    .selectFrom('workflows')
    .select('id')
    .where('organization_id', 'is', null)
    .limit(1)
    .offset(max - 1)
    .executeTakeFirst();
  if (!full) return;
  throw new ServiceError(
    429,
    'rate_limited',
    `This gateway already holds ${max} anonymous workflows nobody has claimed (FLOWGATE_MAX_UNCLAIMED_WORKFLOWS); nothing was saved. Send an API key to save the workflow in your organization, which this bound does not apply to, or retry after ${UNCLAIMED_RETRY_AFTER_SECONDS} s, as unclaimed workflows are deleted after their retention days.`,
    { limit: max, retryAfterSeconds: UNCLAIMED_RETRY_AFTER_SECONDS },
    { 'Retry-After': String(UNCLAIMED_RETRY_AFTER_SECONDS) },
  );
}

/** `anonymous`: the claim token's hash of an unowned workflow, and the deployment's bound on unclaimed ones (unset: none). */
export async function createWorkflow(
  store: Store,
  owner: WorkflowOwner | null,
  input: NewWorkflow,
  anonymous?: { claimTokenHash: string; maxUnclaimed?: number },
): Promise<WorkflowRecord> {
  const now = nowIso();
  const row = {
    id: newId(),
    organization_id: owner?.organizationId ?? null,
    user_id: owner?.userId ?? null,
    name: input.name,
    description: input.description ?? null,
    visibility: 'private' as const,
    nodes: JSON.stringify(input.graph.nodes),
    edges: JSON.stringify(input.graph.edges),
    project_id: input.projectId ?? null,
    tag_id: input.tagId ?? null,
    enabled: input.enabled === false ? 0 : 1,
    claim_token_hash: anonymous?.claimTokenHash ?? null,
    featured: 0,
    featured_category: null,
    featured_protocol: null,
    featured_order: null,
    published_at: null,
    created_at: now,
    updated_at: now,
  };
  await store.transaction().execute(async (trx) => {
    if (owner) {
      await assertWorkflowRoom(trx, owner);
      await assertReference(trx, 'projects', 'projectId', owner.organizationId, row.project_id);
      await assertReference(trx, 'tags', 'tagId', owner.organizationId, row.tag_id);
    } else if (row.project_id || row.tag_id) {
      throw new ServiceError(400, 'invalid_input', 'An anonymous workflow cannot be assigned a projectId or tagId; claim it into an organization first.');
    } else {
      await assertUnclaimedRoom(trx, anonymous?.maxUnclaimed);
    }
    await trx.insertInto('workflows').values(row).execute();
  });
  return toWorkflowRecord(row);
}

export interface WorkflowPatch {
  name?: string;
  description?: string | null;
  graph?: WorkflowGraph;
  projectId?: string | null;
  tagId?: string | null;
  enabled?: boolean;
  visibility?: 'private' | 'public';
  /** Public workflows the organization may hold (config.quotas.publicWorkflows); checked only when this one turns public. Unset: no bound. */
  publicQuota?: number;
  /**
   * Checks made in the update's transaction, with the workflow's row locked (PostgreSQL; SQLite's writes are one at a
   * time): a listing published meanwhile (src/catalog/publish.ts, which takes the same lock) is seen, never raced.
   */
  guard?: (trx: Store) => Promise<void>;
}

export async function updateWorkflow(store: Store, organizationId: string, workflowId: string, patch: WorkflowPatch): Promise<WorkflowRecord> {
  await store.transaction().execute(async (trx) => {
    const read = trx
      .selectFrom('workflows')
      .select(['id', 'published_at', 'visibility'])
      .where('id', '=', workflowId)
      .where('organization_id', '=', organizationId);
    const existing = await (isPostgres(trx) ? read.forUpdate() : read).executeTakeFirst();
    if (!existing) throw workflowNotFound(workflowId);
    await patch.guard?.(trx);
    if (patch.visibility === 'public' && existing.visibility !== 'public') await assertRoom(trx, 'publicWorkflows', patch.publicQuota, organizationId);
    await assertReference(trx, 'projects', 'projectId', organizationId, patch.projectId);
    await assertReference(trx, 'tags', 'tagId', organizationId, patch.tagId);
    const now = nowIso();
    await trx
      .updateTable('workflows')
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.graph ? { nodes: JSON.stringify(patch.graph.nodes), edges: JSON.stringify(patch.graph.edges) } : {}),
        ...(patch.projectId !== undefined ? { project_id: patch.projectId } : {}),
        ...(patch.tagId !== undefined ? { tag_id: patch.tagId } : {}),
        ...(patch.enabled !== undefined ? { enabled: patch.enabled ? 1 : 0 } : {}),
        ...(patch.visibility !== undefined
          ? { visibility: patch.visibility, published_at: patch.visibility === 'public' ? (existing.published_at ?? now) : null }
          : {}),
        updated_at: now,
      })
      .where('id', '=', workflowId)
      .execute();
  });
  return getWorkflow(store, organizationId, workflowId);
}

export async function deleteWorkflow(store: Store, organizationId: string, workflowId: string, force: boolean): Promise<{ deletedExecutions: number }> {
  return store.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('workflows')
      .select('id')
      .where('id', '=', workflowId)
      .where('organization_id', '=', organizationId)
      .executeTakeFirst();
    if (!existing) throw workflowNotFound(workflowId);
    const { count } = await trx
      .selectFrom('workflow_executions')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('workflow_id', '=', workflowId)
      .executeTakeFirstOrThrow();
    const executions = Number(count);
    if (executions > 0 && !force) {
      throw new ServiceError(
        409,
        'conflict',
        `Workflow ${workflowId} has ${executions} execution(s) in its history. Delete with force=true to remove the workflow together with its runs and logs.`,
        {
          executionCount: executions,
        },
      );
    }
    // Logs cascade from executions, executions from the workflow (foreign keys).
    await trx.deleteFrom('workflows').where('id', '=', workflowId).execute();
    return { deletedExecutions: executions };
  });
}

export async function duplicateWorkflow(store: Store, owner: WorkflowOwner, workflowId: string): Promise<WorkflowRecord> {
  const source = await getWorkflow(store, owner.organizationId, workflowId);
  // Within the name limit, so the copy (and its download) can be saved and imported again.
  const suffix = ' (copy)';
  return createWorkflow(store, owner, {
    name: `${source.name
      .slice(0, GRAPH_LIMITS.maxLabelLength - suffix.length)
      .replace(/[\uD800-\uDBFF]$/, '')
      .trimEnd()}${suffix}`,
    description: source.description,
    graph: { nodes: source.nodes, edges: source.edges },
    projectId: source.projectId,
    tagId: source.tagId,
    enabled: source.enabled,
  });
}

export const CLAIM_TOKEN_PREFIX = 'wfc_';

/** Moves an anonymous workflow into the caller's organization; only the holder of its claim token (its creator) may. */
export async function claimWorkflow(store: Store, owner: WorkflowOwner, workflowId: string, claimToken: string): Promise<WorkflowRecord> {
  await store.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('workflows').select(['id', 'organization_id', 'claim_token_hash']).where('id', '=', workflowId).executeTakeFirst();
    if (!row) throw workflowNotFound(workflowId);
    if (row.organization_id !== null) {
      if (row.organization_id === owner.organizationId) {
        throw new ServiceError(409, 'already_claimed', `Workflow ${workflowId} already belongs to this organization.`);
      }
      throw workflowNotFound(workflowId);
    }
    const matched = await matchSecret(claimToken, CLAIM_TOKEN_PREFIX, async (hash) => (row.claim_token_hash === hash ? { key_hash: hash } : undefined));
    if (!matched) {
      throw new ServiceError(
        403,
        'not_original_creator',
        'Only the original creator may claim this workflow: send the claimToken (wfc_...) returned when it was created.',
      );
    }
    await assertWorkflowRoom(trx, owner);
    await trx
      .updateTable('workflows')
      .set({ organization_id: owner.organizationId, user_id: owner.userId, claim_token_hash: null, updated_at: nowIso() })
      .where('id', '=', workflowId)
      .where('organization_id', 'is', null)
      .execute();
  });
  return getWorkflow(store, owner.organizationId, workflowId);
}
