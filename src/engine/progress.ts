import type { WorkflowExecutionsTable } from '../store/schema.ts';
import type { WorkflowGraph } from './graph.ts';
import type { LogStatus } from './executions.ts';

/** Per-node statuses and progress figures of a run, from its graph snapshot and logs (listLogStatuses). */
export function executionProgress(row: WorkflowExecutionsTable, logs: readonly LogStatus[]) {
  const graph = JSON.parse(row.graph ?? '{"nodes":[]}') as WorkflowGraph;
  // Logs arrive newest first; the latest non-iteration row of a node is its status.
  const latest = new Map<string, LogStatus>();
  for (const log of logs) if (log.iterationIndex === null && !latest.has(log.nodeId)) latest.set(log.nodeId, log);
  for (const log of logs) if (!latest.has(log.nodeId)) latest.set(log.nodeId, log);
  const nodeStatuses = graph.nodes.map((n) => ({ nodeId: n.id, status: latest.get(n.id)?.status ?? 'pending' }));
  const completedSteps = nodeStatuses.filter((n) => ['success', 'error', 'cancelled'].includes(n.status)).length;
  const runningSteps = nodeStatuses.filter((n) => n.status === 'running').length;
  const current = graph.nodes.find((n) => n.id === row.current_node_id) ?? graph.nodes.find((n) => latest.get(n.id)?.status === 'running');
  const totalSteps = graph.nodes.length;
  return {
    nodeStatuses,
    progress: {
      totalSteps,
      completedSteps,
      runningSteps,
      currentNodeId: current?.id ?? null,
      currentNodeName: current ? current.data.label || current.id : null,
      percentage: totalSteps === 0 ? 0 : Math.round((completedSteps / totalSteps) * 100),
    },
  };
}
