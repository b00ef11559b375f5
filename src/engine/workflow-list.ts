import type { Store } from '../store/db.ts';
import type { WorkflowsTable } from '../store/schema.ts';
import { toWorkflowRecord, type WorkflowRecord } from './workflows.ts';
import { readBoundedList } from './whole-list.ts';

export interface WorkflowListQuery {
  projectId?: string;
  tagId?: string;
  /** Omitted: the complete list. Either way refused past MAX_WHOLE_LIST_CHARS of graphs (whole-list.ts). */
  limit?: number;
  offset?: number;
}

/**
 * An organization's workflows, newest first, in a stable order (created_at,
 * then id) so consecutive pages neither skip nor repeat rows.
 */
export async function listWorkflows(store: Store, organizationId: string, query: WorkflowListQuery): Promise<WorkflowRecord[]> {
  let select = store.selectFrom('workflows').selectAll().where('organization_id', '=', organizationId);
  if (query.projectId !== undefined) select = select.where('project_id', '=', query.projectId);
  if (query.tagId !== undefined) select = select.where('tag_id', '=', query.tagId);
  select = select.orderBy('created_at', 'desc').orderBy('id', 'desc');
  const rows = await readBoundedList<WorkflowsTable>(
    (limit, last) =>
      (last
        ? select.where((eb) => eb.or([eb('created_at', '<', last.created_at), eb.and([eb('created_at', '=', last.created_at), eb('id', '<', last.id)])]))
        : select.offset(query.offset ?? 0)
      )
        .limit(limit)
        .execute(),
    (row) => row.nodes.length + row.edges.length,
    { what: "This organization's workflows", example: 'GET /api/workflows?limit=200&offset=0', limit: query.limit },
  );
  return rows.map(toWorkflowRecord);
}
