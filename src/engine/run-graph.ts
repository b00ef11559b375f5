import type { WorkflowEdge, WorkflowGraph, WorkflowNode } from './graph.ts';

/**
 * How a run walks its graph: the order nodes run in from the trigger, which
 * nodes a For Each repeats, and whether a node's parents let it run
 * (failed parents stop it, Condition branches route by their true/false
 * handles). Pure functions of the graph and of the outcomes so far.
 */

export type NodeState = 'done' | 'failed' | 'skipped';

export interface RunGraph {
  nodes: Map<string, WorkflowNode>;
  incoming: Map<string, WorkflowEdge[]>;
  outgoing: Map<string, WorkflowEdge[]>;
}

export const actionTypeOf = (node: WorkflowNode) => (typeof node.data.config.actionType === 'string' ? node.data.config.actionType : '');
export const labelOf = (node: WorkflowNode) => node.data.label || node.id;

/** A step output's payload: its `data`, or the output without its `success` flag. */
export const dataOf = (output: unknown) => {
  if (output && typeof output === 'object' && 'data' in output) return (output as { data: unknown }).data;
  if (output && typeof output === 'object') {
    const { success: _success, ...rest } = output as Record<string, unknown>;
    return rest;
  }
  return output;
};

export function indexGraph(graph: WorkflowGraph): RunGraph {
  const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
  const incoming = new Map<string, WorkflowEdge[]>();
  const outgoing = new Map<string, WorkflowEdge[]>();
  for (const edge of graph.edges) {
    if (!nodes.has(edge.source) || !nodes.has(edge.target)) continue;
    incoming.set(edge.target, [...(incoming.get(edge.target) ?? []), edge]);
    outgoing.set(edge.source, [...(outgoing.get(edge.source) ?? []), edge]);
  }
  return { nodes, incoming, outgoing };
}

/** Nodes reachable from `start` (excluding it), in topological order. */
export function reachableInOrder(g: RunGraph, start: string, within?: ReadonlySet<string>): string[] {
  const reachable = new Set<string>();
  const stack = [start];
  while (stack.length) {
    for (const edge of g.outgoing.get(stack.pop()!) ?? []) {
      if (within && !within.has(edge.target)) continue;
      if (!reachable.has(edge.target)) {
        reachable.add(edge.target);
        stack.push(edge.target);
      }
    }
  }
  const indegree = new Map([...reachable].map((id) => [id, (g.incoming.get(id) ?? []).filter((e) => reachable.has(e.source)).length]));
  const queue = [...reachable].filter((id) => indegree.get(id) === 0);
  const order: string[] = [];
  while (queue.length) {
    const id = queue.shift()!;
    order.push(id);
    for (const edge of g.outgoing.get(id) ?? []) {
      if (!indegree.has(edge.target)) continue;
      indegree.set(edge.target, indegree.get(edge.target)! - 1);
      if (indegree.get(edge.target) === 0) queue.push(edge.target);
    }
  }
  return order;
}

/** The For Each body: nodes after it up to (not including) its Collect, or all of its descendants when it has none. */
export function forEachBody(g: RunGraph, forEachId: string): { body: string[]; collectId: string | undefined } {
  const descendants = reachableInOrder(g, forEachId);
  const collectId = descendants.find((id) => actionTypeOf(g.nodes.get(id)!) === 'Collect');
  if (!collectId) return { body: descendants, collectId };
  const leadsToCollect = new Set<string>();
  const stack = [collectId];
  while (stack.length) {
    for (const edge of g.incoming.get(stack.pop()!) ?? []) {
      if (!leadsToCollect.has(edge.source) && edge.source !== forEachId) {
        leadsToCollect.add(edge.source);
        stack.push(edge.source);
      }
    }
  }
  return { body: descendants.filter((id) => leadsToCollect.has(id) && id !== collectId), collectId };
}

/** Whether a node should run, given its parents' outcomes; the reason when it should not. */
export function activation(
  g: RunGraph,
  nodeId: string,
  stateOf: (id: string) => NodeState | undefined,
  outputOf: (id: string) => unknown,
): { run: true } | { run: false; state: NodeState; reason: string } {
  const edges = g.incoming.get(nodeId) ?? [];
  const failedParent = edges.find((e) => stateOf(e.source) === 'failed');
  if (failedParent) return { run: false, state: 'failed', reason: `Not run: upstream node ${failedParent.source} failed.` };
  const live = edges.some((e) => {
    if (stateOf(e.source) !== 'done') return false;
    const parent = g.nodes.get(e.source)!;
    if (actionTypeOf(parent) !== 'Condition') return true;
    const result = (dataOf(outputOf(e.source)) as { result?: unknown })?.result === true;
    return String(e.sourceHandle ?? 'true') === String(result);
  });
  return live ? { run: true } : { run: false, state: 'skipped', reason: 'Not run: its branch was not taken.' };
}
