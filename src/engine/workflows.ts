import type { Store } from '../store/db.ts';
import type { WorkflowsTable } from '../store/schema.ts';
import { ServiceError } from '../errors.ts';
import { first, prepared } from '../store/prepared.ts';
import type { WorkflowEdge, WorkflowNode } from './graph.ts';

/** Stored workflows: reading and shaping records. Writes live in workflow-writes.ts. */

export interface WorkflowRecord {
  id: string;
  name: string;
  description: string | null;
  visibility: 'private' | 'public';
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
  projectId: string | null;
  tagId: string | null;
  enabled: boolean;
  organizationId: string | null;
  userId: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toWorkflowRecord(row: WorkflowsTable): WorkflowRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    visibility: row.visibility,
    nodes: JSON.parse(row.nodes) as WorkflowNode[],
    edges: JSON.parse(row.edges) as WorkflowEdge[],
    projectId: row.project_id,
    tagId: row.tag_id,
    enabled: row.enabled === 1,
    organizationId: row.organization_id,
    userId: row.user_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export const workflowNotFound = (workflowId: string) =>
  new ServiceError(404, 'not_found', `Workflow ${workflowId} not found in this organization. List yours with list_workflows (GET /api/workflows).`, {
    workflowId,
  });

// Read on every run start: compiled once.
const selectWorkflow = prepared<{ workflowId: string; organizationId: string }, WorkflowsTable>((db: Store, a) =>
  db.selectFrom('workflows').selectAll().where('id', '=', a.workflowId).where('organization_id', '=', a.organizationId),
);

/**
 * A workflow of the given organization. Another organization's workflow is
 * reported exactly like a missing one (404), so ids cannot be probed.
 */
export async function getWorkflow(store: Store, organizationId: string, workflowId: string): Promise<WorkflowRecord> {
  const row = await first(selectWorkflow, store, { workflowId, organizationId });
  if (!row) throw workflowNotFound(workflowId);
  return toWorkflowRecord(row);
}
