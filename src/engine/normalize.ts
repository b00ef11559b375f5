import { getAction, getTrigger } from '../actions/index.ts';
import type { FieldMap } from '../actions/index.ts';
import { isRecord } from '../is-record.ts';
import {
  NODE_STATUSES,
  type EdgeInput,
  type GraphInput,
  type InvalidField,
  type NodeInput,
  type NodeKind,
  type NodeStatus,
  type WorkflowEdge,
  type WorkflowGraph,
  type WorkflowNode,
  receivedValue as received,
} from './graph.ts';

/**
 * Normalization on save (SPEC Node): what a client may leave out or spell
 * loosely becomes the one stored shape. It never judges meaning beyond what
 * it must to rewrite (validate.ts does that), and it keeps every field it
 * does not know: nothing a client sent disappears silently.
 */

/** Layout grid for nodes sent without a position: columns by depth from the roots, rows by order. */
const COLUMN_WIDTH = 280;
const ROW_HEIGHT = 140;

export interface NormalizeResult {
  graph: WorkflowGraph;
  problems: InvalidField[];
}

const isPosition = (value: unknown): value is { x: number; y: number } => isRecord(value) && Number.isFinite(value.x) && Number.isFinite(value.y);

/** `trigger`/`action` in any case; anything else is a plugin slug. */
function kindOf(type: string): NodeKind | undefined {
  const lower = type.trim().toLowerCase();
  return lower === 'trigger' || lower === 'action' ? lower : undefined;
}

/** The field hints of the registry entry a config names, for lossless coercion. */
function fieldHints(kind: NodeKind, config: Record<string, unknown>): FieldMap | undefined {
  const key = kind === 'trigger' ? config.triggerType : config.actionType;
  if (typeof key !== 'string') return undefined;
  const entry = kind === 'trigger' ? getTrigger(key) : getAction(key);
  return entry ? { ...entry.requiredFields, ...entry.optionalFields } : undefined;
}

/**
 * Agents send `network: 8453` where the registry says string. A number whose
 * decimal text is exact becomes that text; anything that would change on the
 * way (exponents, unsafe integers) is left for validation to refuse.
 */
function coerceNumbers(config: Record<string, unknown>, hints: FieldMap | undefined): void {
  if (!hints) return;
  for (const [field, value] of Object.entries(config)) {
    if (typeof value !== 'number' || !hints[field]?.startsWith('string')) continue;
    const text = String(value);
    if (Number.isFinite(value) && !/e/i.test(text) && (!Number.isInteger(value) || Number.isSafeInteger(value))) config[field] = text;
  }
}

function defaultLabel(kind: NodeKind, config: Record<string, unknown>): string {
  if (kind === 'trigger') {
    const trigger = typeof config.triggerType === 'string' ? getTrigger(config.triggerType) : undefined;
    return trigger?.label ?? (typeof config.triggerType === 'string' && config.triggerType.trim() ? config.triggerType.trim() : 'Trigger');
  }
  const actionType = typeof config.actionType === 'string' ? config.actionType.trim() : '';
  return getAction(actionType)?.label ?? (actionType || 'Action');
}

interface NodeDraft {
  node: WorkflowNode;
  /** Position came with the node; auto-layout leaves it alone. */
  placed: boolean;
}

function normalizeNode(input: NodeInput, index: number, problems: InvalidField[]): NodeDraft {
  const { data: rawData, position: rawPosition, type: rawType, ...nodeRest } = input;
  const data = { ...(rawData ?? {}) } as Record<string, unknown>;
  let config: Record<string, unknown> = isRecord(data.config) ? { ...data.config } : {};
  const sentType = rawType.trim();
  const sentLabel = typeof data.label === 'string' ? data.label.trim() : '';
  const at = `nodes[${index}]`;
  // Labelled once the node's final label is known, so entries match validate.ts's.
  const found: Omit<InvalidField, 'nodeId' | 'nodeLabel'>[] = [];
  const problem = (entry: Omit<InvalidField, 'nodeId' | 'nodeLabel'>) => found.push(entry);

  let kind = kindOf(sentType);
  if (!kind) {
    // SPEC Node: a plugin slug sent as the type is the action it names.
    kind = 'action';
    const configured = typeof config.actionType === 'string' ? config.actionType.trim() : '';
    if (!configured) {
      const { actionType: _empty, ...fields } = config;
      config = { actionType: sentType, ...fields };
    } else if (configured !== sentType) {
      problem({
        code: 'conflicting_action_type',
        path: `${at}.type`,
        received: sentType,
        message: `Node type ${JSON.stringify(sentType)} names an action, but data.config.actionType is ${JSON.stringify(configured)}. Send type "action" with data.config.actionType set to the one you mean.`,
        suggestion: 'action',
      });
    }
  }

  if (data.type !== undefined) {
    const dataType = typeof data.type === 'string' ? data.type.trim() : data.type;
    // Equal to what was sent as the outer type, or to what it normalized to.
    if (dataType !== sentType && dataType !== kind && !(typeof dataType === 'string' && kindOf(dataType) === kind)) {
      problem({
        code: 'data_type_mismatch',
        path: `${at}.data.type`,
        received: received(data.type),
        message: `data.type is ${JSON.stringify(data.type)} but the node type is ${JSON.stringify(sentType)}${sentType !== kind ? ` (normalized to "${kind}")` : ''}. data.type must equal the outer type: send "${kind}" or leave it out and the server adds it.`,
        suggestion: kind,
      });
    }
  }

  let status: NodeStatus = 'idle';
  if (data.status !== undefined) {
    if ((NODE_STATUSES as readonly unknown[]).includes(data.status)) status = data.status as NodeStatus;
    else {
      problem({
        code: 'invalid_status',
        path: `${at}.data.status`,
        received: received(data.status),
        message: `data.status must be one of ${NODE_STATUSES.join(', ')}; leave it out and the server sets "idle".`,
        suggestion: 'idle',
      });
    }
  }

  // SPEC names data.position; the stored shape keeps it at the top level, as graph editors expect.
  let position = isPosition(rawPosition) ? { x: rawPosition.x, y: rawPosition.y } : undefined;
  if (isPosition(data.position)) {
    position ??= { x: data.position.x, y: data.position.y };
    delete data.position;
  }

  coerceNumbers(config, fieldHints(kind, config));
  const label = sentLabel || defaultLabel(kind, config);
  for (const entry of found) problems.push({ nodeId: input.id, nodeLabel: label, ...entry });

  const node: WorkflowNode = {
    ...nodeRest,
    id: input.id,
    type: kind,
    position: position ?? { x: 0, y: 0 },
    data: {
      ...data,
      label,
      type: kind,
      config,
      status,
    },
  };
  return { node, placed: position !== undefined };
}

function edgeBaseId(edge: EdgeInput): string {
  return `e-${edge.source}-${edge.target}${edge.sourceHandle ? `-${edge.sourceHandle}` : ''}`;
}

function normalizeEdges(inputs: readonly EdgeInput[], problems: InvalidField[]): WorkflowEdge[] {
  const taken = new Set(inputs.map((e) => e.id).filter((id): id is string => typeof id === 'string'));
  const seen = new Map<string, number>();
  return inputs.map((input, index) => {
    let id = input.id;
    if (id === undefined) {
      const base = edgeBaseId(input);
      id = base;
      for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
      taken.add(id);
    } else if (seen.has(id)) {
      problems.push({
        code: 'duplicate_edge_id',
        nodeId: null,
        nodeLabel: null,
        path: `edges[${index}].id`,
        received: id,
        message: `Edge id ${JSON.stringify(id)} is already used by edges[${seen.get(id)}]. Edge ids must be unique; omit id and the server generates one.`,
      });
    }
    seen.set(id, seen.get(id) ?? index);
    const edge: WorkflowEdge = { ...input, id, source: input.source, target: input.target };
    if (typeof edge.sourceHandle === 'string') edge.sourceHandle = edge.sourceHandle.trim();
    return edge;
  });
}

/**
 * Depth of each node by longest path from the roots (Kahn's order); nodes
 * on cycles, which have no such depth, go one column past the rest.
 */
function layoutDepths(nodes: readonly WorkflowNode[], edges: readonly WorkflowEdge[]): Map<string, number> {
  const ids = new Set(nodes.map((n) => n.id));
  const incoming = new Map<string, number>([...ids].map((id) => [id, 0]));
  const next = new Map<string, string[]>();
  for (const { source, target } of edges) {
    if (!ids.has(source) || !ids.has(target) || source === target) continue;
    incoming.set(target, incoming.get(target)! + 1);
    if (!next.has(source)) next.set(source, []);
    next.get(source)!.push(target);
  }
  const depth = new Map<string, number>();
  const queue = [...ids].filter((id) => incoming.get(id) === 0);
  for (const id of queue) depth.set(id, 0);
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    for (const target of next.get(id) ?? []) {
      depth.set(target, Math.max(depth.get(target) ?? 0, depth.get(id)! + 1));
      const left = incoming.get(target)! - 1;
      incoming.set(target, left);
      if (left === 0) queue.push(target);
    }
  }
  const deepest = Math.max(-1, ...depth.values());
  for (const id of ids) if (incoming.get(id)! > 0) depth.set(id, deepest + 1);
  return depth;
}

function autoLayout(drafts: readonly NodeDraft[], edges: readonly WorkflowEdge[]): void {
  if (drafts.every((d) => d.placed)) return;
  const depths = layoutDepths(
    drafts.map((d) => d.node),
    edges,
  );
  const rows = new Map<number, number>();
  for (const { node, placed } of drafts) {
    if (placed) continue;
    const column = depths.get(node.id) ?? 0;
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    node.position = { x: column * COLUMN_WIDTH, y: row * ROW_HEIGHT };
  }
}

export function normalizeGraph(input: GraphInput): NormalizeResult {
  const problems: InvalidField[] = [];
  const drafts = input.nodes.map((node, index) => normalizeNode(node, index, problems));

  const firstIndex = new Map<string, number>();
  drafts.forEach(({ node }, index) => {
    const first = firstIndex.get(node.id);
    if (first === undefined) {
      firstIndex.set(node.id, index);
      return;
    }
    problems.push({
      nodeId: node.id,
      nodeLabel: node.data.label,
      code: 'duplicate_node_id',
      path: `nodes[${index}].id`,
      received: node.id,
      message: `Node id ${JSON.stringify(node.id)} is already used by nodes[${first}] ("${drafts[first].node.data.label}"). Node ids must be unique within a workflow; rename one and update the edges and templates that refer to it.`,
    });
  });

  const edges = normalizeEdges(input.edges, problems);
  autoLayout(drafts, edges);
  return { graph: { nodes: drafts.map((d) => d.node), edges }, problems };
}

/**
 * What create with empty nodes saves (SPEC Workflows): a Manual trigger and an
 * action node still to be configured, connected. The open action validates
 * with an `unconfigured_action` warning; execution refuses it until it has an actionType.
 */
export function defaultGraph(): WorkflowGraph {
  return normalizeGraph({
    nodes: [
      { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', config: { triggerType: 'Manual' } } },
      { id: 'action', type: 'action', data: { label: 'Action', config: {} } },
    ],
    edges: [{ source: 'trigger', target: 'action' }],
  }).graph;
}
