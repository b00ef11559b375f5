import type { Store } from '../store/db.ts';
import { toWorkflowRecord, type WorkflowRecord } from './workflows.ts';

export interface WorkflowListQuery {
  projectId?: string;
  tagId?: string;
  /** Omitted: the complete list. */
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
  if (query.limit !== undefined) select = select.limit(query.limit).offset(query.offset ?? 0);
  return (await select.execute()).map(toWorkflowRecord);
}
