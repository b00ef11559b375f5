import { z } from 'zod';

/**
 * The shape of a workflow graph: one trigger node plus action nodes joined by
 * edges. Input schemas are deliberately lenient about *meaning* (normalize.ts
 * and validate.ts judge that, reporting every problem at once) but strict
 * about *size*, so hostile graphs are refused before any work is done.
 */

export const GRAPH_LIMITS = {
  maxNodes: 500,
  maxEdges: 2000,
  maxIdLength: 128,
  maxLabelLength: 200,
  /** JSON nesting depth allowed inside one node's config. */
  maxConfigDepth: 12,
  /** Characters of one node's config once serialized. */
  maxConfigBytes: 256 * 1024,
} as const;

export const nodeIdSchema = z
  .string()
  .trim()
  .min(1, 'node id must not be empty')
  .max(GRAPH_LIMITS.maxIdLength, `node id must be at most ${GRAPH_LIMITS.maxIdLength} characters`);

export const positionSchema = z.object({ x: z.number().finite(), y: z.number().finite() });

/** A node as a client sends it. `type` may be `trigger`, `action`, or a plugin slug (`web3/check-balance`). */
export const nodeInputSchema = z.looseObject({
  id: nodeIdSchema,
  type: z.string().trim().min(1, 'node type must not be empty').max(200),
  position: positionSchema.optional(),
  data: z
    .looseObject({
      label: z.string().max(GRAPH_LIMITS.maxLabelLength).optional(),
      description: z.string().max(2000).optional(),
      type: z.string().optional(),
      config: z.record(z.string(), z.unknown()).optional(),
      status: z.string().max(50).optional(),
      position: positionSchema.optional(),
    })
    .optional(),
});

export const edgeInputSchema = z.looseObject({
  id: z.string().trim().min(1).max(GRAPH_LIMITS.maxIdLength).optional(),
  source: nodeIdSchema,
  target: nodeIdSchema,
  sourceHandle: z.string().max(50).nullish(),
  targetHandle: z.string().max(50).nullish(),
});

export const nodesInputSchema = z.array(nodeInputSchema).max(GRAPH_LIMITS.maxNodes, `a workflow may have at most ${GRAPH_LIMITS.maxNodes} nodes`);
export const edgesInputSchema = z.array(edgeInputSchema).max(GRAPH_LIMITS.maxEdges, `a workflow may have at most ${GRAPH_LIMITS.maxEdges} edges`);

/** A whole graph as a client sends it (create, update, validate_workflow). */
export const graphInputSchema = z.object({ nodes: nodesInputSchema, edges: edgesInputSchema.default([]) });

export type NodeInput = z.infer<typeof nodeInputSchema>;
export type EdgeInput = z.infer<typeof edgeInputSchema>;
export type GraphInput = { nodes: NodeInput[]; edges: EdgeInput[] };

export const NODE_KINDS = ['trigger', 'action'] as const;
export const NODE_STATUSES = ['idle', 'running', 'success', 'error'] as const;

export type NodeKind = (typeof NODE_KINDS)[number];
export type NodeStatus = (typeof NODE_STATUSES)[number];

/** A node as stored after normalization: the outer `type` is only `trigger` or `action`. */
export interface WorkflowNode {
  id: string;
  type: NodeKind;
  position: { x: number; y: number };
  data: {
    label: string;
    description?: string;
    /** Always equal to the outer `type`. */
    type: NodeKind;
    /** `triggerType` on triggers, `actionType` on actions, plus the action's fields. */
    config: Record<string, unknown>;
    status: NodeStatus;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

export interface WorkflowEdge {
  id: string;
  source: string;
  target: string;
  sourceHandle?: string | null;
  targetHandle?: string | null;
  [key: string]: unknown;
}

export interface WorkflowGraph {
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
}

/**
 * One problem found in a graph, addressed so an agent can fix it without
 * guessing: which node (id and label), which field path, what was received.
 */
export interface InvalidField {
  code: string;
  nodeId: string | null;
  nodeLabel: string | null;
  /** e.g. `nodes[2].data.config.actionType` or `edges[0].target`. */
  path: string;
  received?: unknown;
  message: string;
  suggestion?: string;
}

export interface ValidationReport {
  valid: boolean;
  nodeCount: number;
  errors: InvalidField[];
  warnings: InvalidField[];
}

/** Characters of a received value echoed back in an InvalidField. */
export const RECEIVED_MAX_CHARS = 200;

/**
 * A received value fit to echo back: short values as they are, long strings
 * and large structures cut to about RECEIVED_MAX_CHARS characters of text.
 */
export function receivedValue(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.length > RECEIVED_MAX_CHARS ? `${value.slice(0, RECEIVED_MAX_CHARS)}… (${value.length} characters)` : value;
  }
  if (value === null || typeof value !== 'object') return value;
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    // Too deep to serialize: say what it is rather than fail.
    return Array.isArray(value) ? '[array]' : '[object]';
  }
  return text.length > RECEIVED_MAX_CHARS ? `${text.slice(0, RECEIVED_MAX_CHARS)}… (${text.length} characters)` : value;
}
