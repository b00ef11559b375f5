import type { Services } from '../services.ts';
import type { WorkflowExecutionsTable } from '../store/schema.ts';
import type { WorkflowEdge, WorkflowGraph, WorkflowNode } from './graph.ts';
import { settleWithVerification } from './verify-transactions.ts';
import { appendTransactionHash, type Completion, type TransactionHashEntry } from './executions.ts';
import { bindSqlTemplates, bindTemplates, resolveValue, type ResolveScope } from './resolve.ts';
import { PARAM_TOKEN } from './runners/database-query.ts';
import { NodeError, type NodeResult, type NodeRunner } from './runners/types.ts';
import { redact, redactEchoes, redactEchoesIn, redactOutput, redactSecrets } from '../text/redact.ts';
import type { RunLog } from './run-log.ts';

/**
 * Runs one claimed execution: topological order from the trigger, templates
 * resolved by path lookup, Condition branches routed by their true/false
 * handles, For Each bodies run per item, every step logged. A failing node
 * stops its branch and the run ends `error` with that node's message.
 */

export interface RunControl {
  executionId: string;
  signal: AbortSignal;
  /** Re-reads the cancel flag (and renews the lease); true means stop at this node boundary. */
  checkpoint(currentNodeId: string | null): Promise<boolean>;
  /** Where steps are logged; the worker commits what it holds with the run's final status. */
  log: RunLog;
}

export interface ExecutorDeps {
  services: Services;
  runners: Readonly<Record<string, NodeRunner>>;
}

const NODE_TIMEOUT_MS = 5 * 60_000;
const DEFAULT_MAX_ITERATIONS = 1000;
const DEFAULT_PARALLELISM = 5;

type NodeState = 'done' | 'failed' | 'skipped';

/**
 * Actions whose effects stay inside the engine (pure computation, or code in
 * the sandbox without host access): their log rows may be committed in
 * batches (see run-log.ts), and they never show as running.
 */
const CONTAINED_ACTIONS: ReadonlySet<string> = new Set(['Condition', 'math/aggregate']);

class Cancelled extends Error {}

const actionTypeOf = (node: WorkflowNode) => (typeof node.data.config.actionType === 'string' ? node.data.config.actionType : '');
const labelOf = (node: WorkflowNode) => node.data.label || node.id;

interface Graph {
  nodes: Map<string, WorkflowNode>;
  incoming: Map<string, WorkflowEdge[]>;
  outgoing: Map<string, WorkflowEdge[]>;
}

function indexGraph(graph: WorkflowGraph): Graph {
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
function reachableInOrder(g: Graph, start: string, within?: ReadonlySet<string>): string[] {
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
function forEachBody(g: Graph, forEachId: string): { body: string[]; collectId: string | undefined } {
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

const dataOf = (output: unknown) => {
  if (output && typeof output === 'object' && 'data' in output) return (output as { data: unknown }).data;
  if (output && typeof output === 'object') {
    const { success: _success, ...rest } = output as Record<string, unknown>;
    return rest;
  }
  return output;
};

export async function runExecution(deps: ExecutorDeps, row: WorkflowExecutionsTable, control: RunControl): Promise<Completion> {
  const { store } = deps.services;
  const { log } = control;
  const graph = JSON.parse(row.graph ?? '{"nodes":[],"edges":[]}') as WorkflowGraph;
  const g = indexGraph(graph);
  const input = JSON.parse(row.input ?? '{}') as Record<string, unknown>;
  const transactions: TransactionHashEntry[] = JSON.parse(row.transaction_hashes ?? '[]');
  const outputs = new Map<string, unknown>();
  const states = new Map<string, NodeState>();
  const handled = new Set<string>();
  let failure: { nodeId: string; message: string } | undefined;
  let lastSuccess: { nodeId: string; output: unknown } | undefined;
  /** Each top-level step's input secrets: the run's result and error must not repeat them either (a published workflow's caller sees both). */
  const echoes = new Map<string, string[]>();

  const scopeOf = (view: ReadonlyMap<string, unknown>): ResolveScope => ({
    outputs: view,
    labelOf: (id) => (g.nodes.has(id) ? labelOf(g.nodes.get(id)!) : undefined),
    now: new Date(),
  });

  // The trigger's output: {success, data: {triggered, triggeredAt, timestamp, ...input}}.
  const trigger = graph.nodes.find((n) => n.type === 'trigger');
  if (!trigger) return { status: 'error', error: 'The workflow has no trigger node.', output: null };
  const now = new Date();
  const triggerOutput = { success: true, data: { triggered: true, triggeredAt: now.toISOString(), timestamp: now.getTime(), ...input } };
  // Steps that finish as they start (trigger, skipped nodes, Collect) are logged in one write.
  await log.finishedStep(
    { executionId: row.id, nodeId: trigger.id, nodeName: labelOf(trigger), nodeType: 'trigger', input },
    'success',
    triggerOutput,
    null,
    now.getTime(),
    true,
  );
  outputs.set(trigger.id, triggerOutput);
  states.set(trigger.id, 'done');

  async function runNode(node: WorkflowNode, view: Map<string, unknown>, iteration?: { index: number; forEachNodeId: string }): Promise<NodeResult> {
    const actionType = actionTypeOf(node);
    const started = Date.now();
    // Set once the config is resolved; a step failing before that logs its stored config, redacted alike.
    let logInput: unknown;
    // The input's secrets, hidden again wherever the step's output or error repeats them.
    let secrets: string[] = [];
    let logId: string | undefined;
    const logEntry = (input: unknown) => ({
      executionId: row.id,
      nodeId: node.id,
      nodeName: labelOf(node),
      nodeType: actionType || 'action',
      input,
      iterationIndex: iteration?.index ?? null,
      forEachNodeId: iteration?.forEachNodeId ?? null,
    });
    const contained = CONTAINED_ACTIONS.has(actionType);
    // Top-level steps that may act outside the engine show as running while they run; others are written once, finished.
    const record = (status: string, result: unknown, message: string | null) => {
      if (logInput === undefined) ({ value: logInput, secrets } = redact(node.data.config));
      const output = redactOutput(result, secrets);
      const error = message === null || secrets.length === 0 ? message : redactEchoes(message, secrets);
      return logId
        ? log.finished(logId, status, output, error, started, contained)
        : log.finishedStep(logEntry(logInput), status, output, error, started, contained);
    };
    try {
      const scope = scopeOf(view);
      const { actionType: _type, ...rawConfig } = node.data.config;
      let config: Record<string, unknown>;
      if (actionType === 'Condition' || actionType === 'code/run-code') {
        // Code that runs in the sandbox gets template values as bound variables, never spliced in.
        const field = actionType === 'Condition' ? 'condition' : 'code';
        const source = typeof rawConfig[field] === 'string' ? (rawConfig[field] as string) : '';
        const bound = bindTemplates(source, scope);
        const { [field]: _source, ...rest } = rawConfig;
        config = { ...(resolveValue(rest, scope) as Record<string, unknown>), [field]: bound.source, __bindings: bound.bindings };
      } else if (actionType === 'Database Query') {
        // SQL gets template values as bound parameters, never as text.
        const query = typeof rawConfig.dbQuery === 'string' ? rawConfig.dbQuery : '';
        const bound = bindSqlTemplates(query, scope, PARAM_TOKEN);
        const { dbQuery: _query, ...rest } = rawConfig;
        config = { ...(resolveValue(rest, scope) as Record<string, unknown>), dbQuery: bound.sql, __params: bound.params };
      } else {
        config = resolveValue(rawConfig, scope) as Record<string, unknown>;
      }
      ({ value: logInput, secrets } = redact(config));
      if (!iteration && secrets.length > 0) echoes.set(node.id, secrets);
      if (!contained && !iteration) logId = await log.started(logEntry(logInput));
      // Nothing acts outside the engine before the log of everything before it is committed.
      else if (!contained) await log.flush();

      if (!actionType)
        throw new NodeError(`Node "${labelOf(node)}" (${node.id}) has no actionType; configure it with one of the keys from list_action_schemas.`);
      if (actionType === 'web3/write-contract' && !config.abiFunction) {
        throw new NodeError(
          `abiFunction is missing on node "${labelOf(node)}" (${node.id}); legacy functionName is no longer executed — rename it to abiFunction.`,
        );
      }
      const runner = deps.runners[actionType];
      if (!runner) throw new NodeError(`The action ${actionType} cannot run on this gateway yet.`);
      const deadline = Date.now() + NODE_TIMEOUT_MS;
      let signal: AbortSignal | undefined;
      const result = await runner(config, {
        executionId: row.id,
        workflowId: row.workflow_id,
        organizationId: row.organization_id,
        node: { id: node.id, label: labelOf(node), actionType },
        ...(iteration ? { iterationIndex: iteration.index } : {}),
        // Built on first read: most steps (Condition, math) never look, and a timer plus a combined signal per step is measurable in For Each loops.
        get signal() {
          signal ??= AbortSignal.any([control.signal, AbortSignal.timeout(Math.max(0, deadline - Date.now()))]);
          return signal;
        },
        services: deps.services,
        recordTransaction: async (tx) => {
          const entry: TransactionHashEntry = {
            hash: tx.hash,
            nodeId: node.id,
            nodeName: labelOf(node),
            chainId: tx.chainId,
            network: tx.network,
            ...(iteration ? { iterationIndex: iteration.index } : {}),
          };
          await appendTransactionHash(store, row.id, entry);
          transactions.push(entry);
        },
      });
      const output: NodeResult = result.success ? result : { ...result, success: false, error: result.error ?? 'The step reported failure without a message.' };
      await record(output.success ? 'success' : 'error', output, output.success ? null : (output.error as string));
      return output;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const output: NodeResult = { success: false, error: message };
      await record('error', output, message);
      return output;
    }
  }

  async function logSkipped(node: WorkflowNode, reason: string) {
    const entry = { executionId: row.id, nodeId: node.id, nodeName: labelOf(node), nodeType: actionTypeOf(node) || 'action', input: null };
    await log.finishedStep(entry, 'cancelled', { success: false, skipped: true, reason }, null, Date.now(), true);
  }

  /** Whether a node should run, given its parents' outcomes; the reason when it should not. */
  function activation(
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

  async function runForEach(node: WorkflowNode): Promise<NodeResult> {
    const { body, collectId } = forEachBody(g, node.id);
    body.forEach((id) => handled.add(id));
    const scope = scopeOf(outputs);
    const config = resolveValue(node.data.config, scope) as Record<string, unknown>;
    let items = config.arraySource;
    if (typeof items === 'string') {
      try {
        items = JSON.parse(items);
      } catch {
        /* reported below */
      }
    }
    const started = Date.now();
    const logId = await log.started({ executionId: row.id, nodeId: node.id, nodeName: labelOf(node), nodeType: 'For Each', input: redactSecrets(config) });
    const contained = body.every((id) => CONTAINED_ACTIONS.has(actionTypeOf(g.nodes.get(id)!)));
    if (!Array.isArray(items)) {
      const output = { success: false, error: `For Each "${labelOf(node)}" needs arraySource to resolve to an array; got ${typeof items}.` };
      await log.finished(logId, 'error', output, output.error, started, contained);
      return output;
    }
    const maxIterations = Math.max(1, Math.min(Number(config.maxIterations ?? DEFAULT_MAX_ITERATIONS) || DEFAULT_MAX_ITERATIONS, 10_000));
    const list = items.slice(0, maxIterations);
    const mode =
      config.concurrency === 'parallel'
        ? DEFAULT_PARALLELISM
        : config.concurrency === 'custom'
          ? Math.max(1, Math.min(Number(config.concurrencyLimit) || 1, 50))
          : 1;
    const results: unknown[] = new Array(list.length);
    const lastBodyNode = collectId
      ? (g.incoming.get(collectId) ?? [])
          .map((e) => e.source)
          .filter((id) => body.includes(id))
          .at(-1)
      : body.at(-1);
    let iterationFailure: string | undefined;
    let next = 0;

    const runIteration = async (index: number) => {
      const view = new Map(outputs);
      const current = {
        success: true,
        data: { currentItem: list[index], index, totalItems: list.length },
        currentItem: list[index],
        index,
        totalItems: list.length,
      };
      view.set(node.id, current);
      const local = new Map<string, NodeState>([[node.id, 'done']]);
      for (const id of body) {
        if (iterationFailure || control.signal.aborted) return;
        const bodyNode = g.nodes.get(id)!;
        const decision = activation(
          id,
          (p) => local.get(p) ?? states.get(p),
          (p) => view.get(p),
        );
        if (!decision.run) {
          local.set(id, decision.state);
          continue;
        }
        const output = await runNode(bodyNode, view, { index, forEachNodeId: node.id });
        view.set(id, output);
        local.set(id, output.success ? 'done' : 'failed');
        if (!output.success) iterationFailure = `Iteration ${index} failed at "${labelOf(bodyNode)}" (${id}): ${output.error}`;
      }
      results[index] = lastBodyNode ? dataOf(view.get(lastBodyNode)) : list[index];
    };
    await Promise.all(
      Array.from({ length: Math.min(mode, list.length) }, async () => {
        while (next < list.length && !iterationFailure && !control.signal.aborted) await runIteration(next++);
      }),
    );
    const output: NodeResult = iterationFailure
      ? { success: false, error: iterationFailure }
      : { success: true, data: { iterations: list.length, truncated: items.length > list.length }, iterations: list.length };
    await log.finished(logId, output.success ? 'success' : 'error', output, output.success ? null : (output.error as string), started, contained);
    if (collectId && output.success) {
      const collect = g.nodes.get(collectId)!;
      const collected = { success: true, data: { results, count: results.length }, results, count: results.length };
      const entry = { executionId: row.id, nodeId: collectId, nodeName: labelOf(collect), nodeType: 'Collect', input: { forEachNodeId: node.id } };
      await log.finishedStep(entry, 'success', collected, null, Date.now(), true);
      outputs.set(collectId, collected);
      states.set(collectId, 'done');
      handled.add(collectId);
      lastSuccess = { nodeId: collectId, output: collected };
    } else if (collectId) {
      states.set(collectId, 'failed');
      handled.add(collectId);
    }
    return output;
  }

  const resultOf = (last: { nodeId: string; output: unknown }) => ({
    result: redactEchoesIn(dataOf(last.output), echoes.get(last.nodeId) ?? []),
    nodeId: last.nodeId,
  });

  try {
    for (const nodeId of reachableInOrder(g, trigger.id)) {
      if (handled.has(nodeId)) continue;
      const node = g.nodes.get(nodeId)!;
      if (await control.checkpoint(nodeId)) throw new Cancelled();
      const decision = activation(
        nodeId,
        (id) => states.get(id),
        (id) => outputs.get(id),
      );
      if (!decision.run) {
        states.set(nodeId, decision.state);
        if (decision.state === 'skipped') await logSkipped(node, decision.reason);
        continue;
      }
      const output = actionTypeOf(node) === 'For Each' ? await runForEach(node) : await runNode(node, outputs);
      outputs.set(nodeId, output);
      states.set(nodeId, output.success ? 'done' : 'failed');
      if (output.success) lastSuccess = { nodeId, output };
      else failure ??= { nodeId, message: redactEchoes(`Node "${labelOf(node)}" (${nodeId}) failed: ${output.error}`, echoes.get(nodeId) ?? []) };
      if (control.signal.aborted) throw new Cancelled();
    }
    if (await control.checkpoint(null)) throw new Cancelled();
  } catch (error) {
    if (error instanceof Cancelled || control.signal.aborted) {
      return settleWithVerification(deps.services, {
        status: 'cancelled',
        error: 'Cancelled at a node boundary',
        output: lastSuccess ? resultOf(lastSuccess) : null,
        transactionHashes: transactions,
      });
    }
    throw error;
  }

  const output = lastSuccess ? resultOf(lastSuccess) : { result: null };
  if (failure)
    return settleWithVerification(deps.services, {
      status: 'error',
      error: failure.message,
      output,
      errorContext: { nodeId: failure.nodeId },
      transactionHashes: transactions,
    });
  // Onchain writes settle as success only once every hash is re-fetched and verified.
  return settleWithVerification(deps.services, { status: 'success', output, transactionHashes: transactions });
}
