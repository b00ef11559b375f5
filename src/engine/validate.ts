import { getAction, suggest, triggerTypes } from '../actions/index.ts';
import { ServiceError } from '../errors.ts';
import { checkAction, checkConfigSize, checkTrigger, type NodeSink } from './config-checks.ts';
import { isRecord } from '../is-record.ts';
import { GRAPH_LIMITS, receivedValue, type GraphInput, type InvalidField, type ValidationReport, type WorkflowGraph, type WorkflowNode } from './graph.ts';
import { normalizeGraph } from './normalize.ts';
import type { ChainCatalog } from '../chains/catalog.ts';
import { readChainTrigger } from './chain-triggers/trigger-spec.ts';
import { SYSTEM_BUILTINS, SYSTEM_LABEL, SYSTEM_NODE_ID, scanTemplates, type TemplateRef } from './templates.ts';

/**
 * Save-time validation of a normalized graph against the action registry.
 * Every problem is reported at once, each addressed by node id, label and
 * field path with what was received and how to fix it, so an agent can repair
 * a whole graph in one round trip. Errors block saving; warnings do not.
 */

/**
 * Entries listed per kind. A hostile graph can hold tens of thousands of
 * broken templates; past this, problems are only counted, and expensive
 * suggestions are no longer computed.
 */
export const MAX_REPORTED_ENTRIES = 200;

interface Sink {
  error(entry: InvalidField): void;
  warn(entry: InvalidField): void;
  /** True once errors are only counted: skip costly did-you-mean work. */
  full(): boolean;
}

/** A node's view of the sink: fills in its id and label. */
function nodeSink(sink: Sink, node: WorkflowNode, index: number): NodeSink {
  const who = { nodeId: node.id, nodeLabel: node.data.label };
  return {
    error: (entry) => sink.error({ ...who, ...entry }),
    warn: (entry) => sink.warn({ ...who, ...entry }),
    full: sink.full,
    configPath: `nodes[${index}].data.config`,
  };
}

/** Collects entries up to MAX_REPORTED_ENTRIES each, then counts; `close` adds one entry saying how many were left out. */
function collector() {
  const errors: InvalidField[] = [];
  const warnings: InvalidField[] = [];
  let omittedErrors = 0;
  let omittedWarnings = 0;
  const sink: Sink = {
    error: (e) => (errors.length < MAX_REPORTED_ENTRIES ? errors.push(finish(e)) : omittedErrors++),
    warn: (e) => (warnings.length < MAX_REPORTED_ENTRIES ? warnings.push(finish(e)) : omittedWarnings++),
    full: () => errors.length >= MAX_REPORTED_ENTRIES,
  };
  const more = (count: number, kind: string): InvalidField => ({
    code: 'too_many_problems',
    nodeId: null,
    nodeLabel: null,
    path: 'nodes',
    received: count,
    message: `${count} more ${kind} not listed (only the first ${MAX_REPORTED_ENTRIES} are). Fix these and validate again.`,
  });
  const close = () => {
    if (omittedErrors > 0) errors.push(more(omittedErrors, 'errors'));
    if (omittedWarnings > 0) warnings.push(more(omittedWarnings, 'warnings'));
    return { errors, warnings };
  };
  return { sink, close };
}

const quote = (value: unknown) => JSON.stringify(value);

// ---------------------------------------------------------------------------
// Graph structure

interface Structure {
  byId: Map<string, { node: WorkflowNode; index: number }>;
  /** Edges whose both ends exist and differ, by index. */
  next: Map<string, Array<{ target: string; edge: number }>>;
  prev: Map<string, string[]>;
  idByLabel: Map<string, string>;
}

const isCondition = (node: WorkflowNode) => node.type === 'action' && node.data.config.actionType === 'Condition';

/** Did-you-mean for a node reference: a node whose label is what was sent, else the nearest id. */
function suggestNodeId(sent: string, byId: Structure['byId']): string | undefined {
  for (const { node } of byId.values()) if (node.data.label === sent) return node.id;
  return suggest(sent, [...byId.keys()]);
}

/** The first node carrying each label. */
function idsByLabel(byId: Structure['byId']): Map<string, string> {
  const out = new Map<string, string>();
  for (const { node } of byId.values()) if (!out.has(node.data.label)) out.set(node.data.label, node.id);
  return out;
}

function checkEdges(graph: WorkflowGraph, byId: Structure['byId'], sink: Sink): Structure {
  const next: Structure['next'] = new Map();
  const prev: Structure['prev'] = new Map();
  const seen = new Map<string, number>();

  graph.edges.forEach((edge, i) => {
    const at = `edges[${i}]`;
    const source = byId.get(edge.source);
    const target = byId.get(edge.target);
    for (const [end, ref, found] of [
      ['source', edge.source, source],
      ['target', edge.target, target],
    ] as const) {
      if (found) continue;
      const near = sink.full() ? undefined : suggestNodeId(ref, byId);
      sink.error({
        code: `unknown_edge_${end}`,
        nodeId: null,
        nodeLabel: null,
        path: `${at}.${end}`,
        received: receivedValue(ref),
        message: `Edge ${edge.id} ${end} ${quote(ref)} is not a node of this workflow${near ? `; did you mean ${quote(near)}?` : '.'} Edges connect node ids.`,
        suggestion: near,
      });
    }
    if (!source || !target) return;
    const who = (n: WorkflowNode) => ({ nodeId: n.id, nodeLabel: n.data.label });

    if (edge.source === edge.target) {
      sink.error({
        ...who(source.node),
        code: 'self_loop',
        path: at,
        received: receivedValue(edge.id),
        message: `Edge ${edge.id} connects node ${quote(edge.source)} to itself. Remove it; to repeat steps use For Each.`,
      });
      return;
    }
    if (target.node.type === 'trigger') {
      sink.error({
        ...who(target.node),
        code: 'edge_into_trigger',
        path: `${at}.target`,
        received: edge.target,
        message: `Edge ${edge.id} leads into the trigger ${quote(edge.target)}; a trigger starts the workflow and has no incoming edges. Reverse or remove the edge.`,
      });
      return; // reported once here, not again as part of a cycle
    }
    if (isCondition(source.node) && edge.sourceHandle !== 'true' && edge.sourceHandle !== 'false') {
      const sent = edge.sourceHandle;
      sink.error({
        ...who(source.node),
        code: 'invalid_condition_handle',
        path: `${at}.sourceHandle`,
        received: sent ?? null,
        message: `Edges leaving the Condition ${quote(source.node.id)} must set sourceHandle "true" or "false" (the branch they belong to); edge ${edge.id} has ${sent ? quote(sent) : 'none'}.`,
        suggestion:
          typeof sent === 'string'
            ? (suggest(sent, ['true', 'false']) ?? ({ yes: 'true', no: 'false' } as Record<string, string>)[sent.toLowerCase()])
            : undefined,
      });
    }

    const key = `${edge.source}\u0000${edge.target}\u0000${edge.sourceHandle ?? ''}`;
    if (seen.has(key)) {
      sink.warn({
        ...who(source.node),
        code: 'duplicate_edge',
        path: at,
        received: edge.id,
        message: `Edge ${edge.id} repeats edges[${seen.get(key)}] (same source, target and handle); remove one.`,
      });
      return;
    }
    seen.set(key, i);
    if (!next.has(edge.source)) next.set(edge.source, []);
    if (!prev.has(edge.target)) prev.set(edge.target, []);
    next.get(edge.source)!.push({ target: edge.target, edge: i });
    prev.get(edge.target)!.push(edge.source);
  });
  return { byId, next, prev, idByLabel: idsByLabel(byId) };
}

/** Strongly connected components with more than one node (Tarjan, iterative so deep graphs cannot overflow the stack). */
function cyclicComponents(ids: readonly string[], next: Structure['next']): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;

  for (const root of ids) {
    if (index.has(root)) continue;
    const work: Array<{ id: string; child: number }> = [{ id: root, child: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = next.get(frame.id) ?? [];
      if (frame.child < edges.length) {
        const target = edges[frame.child++].target;
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ id: target, child: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.id, Math.min(low.get(frame.id)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].id;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.id)!));
      }
      if (low.get(frame.id) === index.get(frame.id)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.id);
        if (component.length > 1) components.push(component.reverse());
      }
    }
  }
  return components;
}

/** One concrete cycle through `start` inside a component: node ids in order, and the edge that closes it. */
function cycleThrough(start: string, members: ReadonlySet<string>, next: Structure['next']): { ids: string[]; closing: number } {
  const parent = new Map<string, { from: string; edge: number }>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    for (const { target, edge } of next.get(queue[i]) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const ids = [queue[i]];
        for (let at = queue[i]; at !== start;) {
          at = parent.get(at)!.from;
          ids.unshift(at);
        }
        return { ids, closing: edge };
      }
      if (!parent.has(target)) {
        parent.set(target, { from: queue[i], edge });
        queue.push(target);
      }
    }
  }
  return { ids: [start], closing: -1 }; // unreachable for a real component
}

function checkCycles(graph: WorkflowGraph, structure: Structure, sink: Sink): void {
  for (const component of cyclicComponents([...structure.byId.keys()], structure.next)) {
    const { ids, closing } = cycleThrough(component[0], new Set(component), structure.next);
    const first = structure.byId.get(ids[0])!.node;
    const route = [...ids, ids[0]].map((id) => quote(id)).join(' → ');
    sink.error({
      code: 'cycle_detected',
      nodeId: first.id,
      nodeLabel: first.data.label,
      path: closing >= 0 ? `edges[${closing}]` : 'edges',
      received: ids,
      message: `Nodes ${route} form a cycle; workflows must be acyclic. Remove one of these edges (e.g. ${closing >= 0 ? `edges[${closing}] ${graph.edges[closing].id}` : 'the last one'}); to repeat steps use For Each.`,
    });
  }
}

function checkReachability(trigger: WorkflowNode, structure: Structure, sink: Sink): void {
  const reached = new Set([trigger.id]);
  const queue = [trigger.id];
  for (let i = 0; i < queue.length; i++) {
    for (const { target } of structure.next.get(queue[i]) ?? []) {
      if (!reached.has(target)) {
        reached.add(target);
        queue.push(target);
      }
    }
  }
  for (const { node, index } of structure.byId.values()) {
    if (reached.has(node.id) || node.type === 'trigger') continue;
    sink.warn({
      nodeId: node.id,
      nodeLabel: node.data.label,
      code: 'unreachable_node',
      path: `nodes[${index}]`,
      message: `Node ${quote(node.id)} is not connected to the trigger ${quote(trigger.id)}, so it never runs. Add an edge to it from the trigger or an upstream node, or remove it.`,
    });
  }
}

// ---------------------------------------------------------------------------
// Templates

function ancestorsOf(id: string, prev: Structure['prev']): Set<string> {
  const seen = new Set<string>();
  const queue = [id];
  for (let i = 0; i < queue.length; i++) {
    for (const source of prev.get(queue[i]) ?? []) {
      if (!seen.has(source)) {
        seen.add(source);
        queue.push(source);
      }
    }
  }
  return seen;
}

const templateText = (ref: TemplateRef, nodeId: string, label: string) => {
  const path = ref.path.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
  return `{{@${nodeId}:${label}${path ? `.${path}` : ''}}}`;
};

function checkBuiltin(ref: TemplateRef, at: NodeSink, path: string): void {
  const name = ref.path.join('.');
  if ((SYSTEM_BUILTINS as readonly string[]).includes(name)) return;
  const near = suggest(name, SYSTEM_BUILTINS);
  at.error({
    code: 'unknown_builtin',
    path,
    received: ref.raw,
    message: `${ref.raw} names no built-in variable; ${SYSTEM_NODE_ID} provides ${SYSTEM_BUILTINS.map((b) => `{{@${SYSTEM_NODE_ID}:${SYSTEM_LABEL}.${b}}}`).join(', ')}.`,
    suggestion: near,
  });
}

function checkTemplates(node: WorkflowNode, at: NodeSink, structure: Structure): void {
  const { byId } = structure;
  const scan = scanTemplates(node.data.config, { labelOf: (id) => byId.get(id)?.node.data.label, maxDepth: GRAPH_LIMITS.maxConfigDepth });
  for (const bad of scan.malformed) {
    at.error({
      code: 'invalid_template',
      path: `${at.configPath}.${bad.location}`,
      received: receivedValue(bad.raw),
      message: `Malformed template ${bad.raw}: ${bad.reason}.`,
    });
  }
  if (scan.refs.length === 0) return;

  let ancestors: Set<string> | undefined;
  for (const ref of scan.refs) {
    const path = `${at.configPath}.${ref.location}`;
    if (ref.nodeId === SYSTEM_NODE_ID) {
      checkBuiltin(ref, at, path);
      continue;
    }
    const source = byId.get(ref.nodeId)?.node;
    if (!source) {
      // The label in the template usually still names the node meant.
      const near = at.full() ? undefined : (structure.idByLabel.get(ref.label) ?? suggestNodeId(ref.nodeId, byId));
      at.error({
        code: 'template_unknown_node',
        path,
        received: ref.raw,
        message: `${ref.raw} refers to node ${quote(ref.nodeId)}, which is not in this workflow${near ? `; did you mean ${templateText(ref, near, byId.get(near)!.node.data.label)}?` : '.'} Templates name an upstream node by id.`,
        suggestion: near,
      });
      continue;
    }
    ancestors ??= ancestorsOf(node.id, structure.prev);
    if (!ancestors.has(source.id)) {
      at.error({
        code: 'template_not_upstream',
        path,
        received: ref.raw,
        message:
          source.id === node.id
            ? `${ref.raw} refers to this node's own output, which does not exist yet when it runs. Reference an upstream node instead.`
            : `${ref.raw} refers to node ${quote(source.id)} (${source.data.label}), which does not run before this node: templates may only read upstream nodes (connected to this one through edges). Add an edge path from ${quote(source.id)} to ${quote(node.id)} or reference another node.`,
      });
      continue;
    }
    if (ref.label !== source.data.label) {
      at.warn({
        code: 'template_label_mismatch',
        path,
        received: ref.raw,
        message: `${ref.raw} names node ${quote(source.id)} with label ${quote(ref.label)}, but its label is ${quote(source.data.label)}. The id decides what is read; fix the label so the template reads true.`,
        suggestion: templateText(ref, source.id, source.data.label),
      });
    }
    const outputs =
      source.type === 'action' && typeof source.data.config.actionType === 'string' ? getAction(source.data.config.actionType)?.outputFields : undefined;
    const field = ref.path[0];
    if (outputs && field !== undefined && !(field in outputs)) {
      const near = suggest(field, Object.keys(outputs));
      at.warn({
        code: 'unknown_output_field',
        path,
        received: ref.raw,
        message: `${source.data.config.actionType} outputs ${Object.keys(outputs).join(', ')}; ${quote(field)} is not among them${near ? `. Did you mean ${quote(near)}?` : '.'}`,
        suggestion: near,
      });
    }
  }
}

/** What validation may consult beyond the registry; without `chains`, trigger networks are not resolved. */
export interface ValidationContext {
  chains?: ChainCatalog;
}

/** Event, Block and Transfer triggers: the chain, addresses and interval the watcher needs. */
function checkChainTrigger(config: Record<string, unknown>, at: NodeSink, context: ValidationContext): void {
  for (const problem of readChainTrigger(config, context.chains).problems) {
    at.error({
      code: problem.code,
      path: `${at.configPath}.${problem.field}`,
      received: receivedValue(problem.received),
      message: problem.message,
      suggestion: problem.suggestion,
    });
  }
}

// ---------------------------------------------------------------------------
// Entry points

export function validateGraph(graph: WorkflowGraph, context: ValidationContext = {}): ValidationReport {
  const { sink, close } = collector();

  // First occurrence wins; normalization reports duplicate ids.
  const byId: Structure['byId'] = new Map();
  graph.nodes.forEach((node, index) => {
    if (!byId.has(node.id)) byId.set(node.id, { node, index });
  });

  const triggers = graph.nodes.filter((n) => n.type === 'trigger');
  if (triggers.length === 0) {
    sink.error({
      code: 'missing_trigger',
      nodeId: null,
      nodeLabel: null,
      path: 'nodes',
      message: `A workflow needs exactly one trigger node: add {"id":"trigger","type":"trigger","data":{"label":"Manual Trigger","config":{"triggerType":"Manual"}}} and connect it to the first action. Trigger types: ${triggerTypes().join(', ')}.`,
    });
  }
  for (const extra of triggers.slice(1)) {
    sink.error({
      code: 'multiple_triggers',
      nodeId: extra.id,
      nodeLabel: extra.data.label,
      path: `nodes[${graph.nodes.indexOf(extra)}].type`,
      received: 'trigger',
      message: `A workflow has exactly one trigger; ${quote(triggers[0].id)} (${triggers[0].data.label}) is already one. Remove this trigger or make it an action node.`,
    });
  }

  const inspectable = new Set<WorkflowNode>();
  graph.nodes.forEach((node, index) => {
    const at = nodeSink(sink, node, index);
    const config = node.data?.config;
    if (!isRecord(config)) {
      at.error({
        code: 'invalid_config',
        path: at.configPath,
        received: receivedValue(config),
        message: 'data.config must be an object holding triggerType or actionType and its fields.',
      });
      return;
    }
    if (!checkConfigSize(config, at)) return;
    inspectable.add(node);
    if (node.type === 'trigger') {
      checkTrigger(config, at);
      checkChainTrigger(config, at, context);
    } else checkAction(config, at);
  });

  const structure = checkEdges(graph, byId, sink);
  checkCycles(graph, structure, sink);
  if (triggers.length > 0) checkReachability(triggers[0], structure, sink);
  graph.nodes.forEach((node, index) => {
    if (inspectable.has(node)) checkTemplates(node, nodeSink(sink, node, index), structure);
  });

  const { errors, warnings } = close();
  return { valid: errors.length === 0, nodeCount: graph.nodes.length, errors, warnings };
}

/** One key order for every entry, and no `received`/`suggestion` keys when there is nothing to say. */
function finish(entry: InvalidField): InvalidField {
  const { code, nodeId, nodeLabel, path, received, message, suggestion } = entry;
  return {
    code,
    nodeId,
    nodeLabel,
    path,
    ...(received === undefined ? {} : { received }),
    message,
    ...(suggestion === undefined ? {} : { suggestion }),
  };
}

/** Normalize, then validate; normalization problems come first among the errors. */
export function prepareGraph(input: GraphInput, context: ValidationContext = {}): { graph: WorkflowGraph; report: ValidationReport } {
  const { graph, problems } = normalizeGraph(input);
  const report = validateGraph(graph, context);
  const errors = [...problems.map(finish), ...report.errors];
  return { graph, report: { ...report, valid: errors.length === 0, errors } };
}

function describeProblem(entry: InvalidField): string {
  const node = entry.nodeId === null ? '' : ` (node ${quote(entry.nodeId)}${entry.nodeLabel ? ` "${entry.nodeLabel}"` : ''})`;
  return `${entry.path}${node}: ${entry.message}`;
}

/**
 * The graph to save, or a 400 `invalid_workflow` listing every error in
 * `invalidFields` (warnings ride along). Used by workflow create and update.
 */
export function assertValidGraph(input: GraphInput, context: ValidationContext = {}): { graph: WorkflowGraph; warnings: InvalidField[] } {
  const { graph, report } = prepareGraph(input, context);
  if (!report.valid) {
    const count = report.errors.length;
    throw new ServiceError(
      400,
      'invalid_workflow',
      `The workflow has ${count} validation error${count === 1 ? '' : 's'}; the first: ${describeProblem(report.errors[0])}${count > 1 ? ' All of them are listed in invalidFields.' : ''}`,
      { invalidFields: report.errors, warnings: report.warnings },
    );
  }
  return { graph, warnings: report.warnings };
}
