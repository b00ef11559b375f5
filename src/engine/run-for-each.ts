import type { WorkflowNode } from './graph.ts';
import { resolveValue } from './resolve.ts';
import { scopeOf, type RunContext } from './run-context.ts';
import { activation, actionTypeOf, dataOf, forEachBody, labelOf, type NodeState } from './run-graph.ts';
import { NodeError, type NodeResult } from './runners/types.ts';
import { runStep } from './run-step.ts';
import { CONTAINED_ACTIONS } from './step-log.ts';
import { RunDataLimitError } from './run-data-limit.ts';
import { redactSecrets } from '../text/redact.ts';

/**
 * A For Each node: runs its body once per item of `arraySource` (in order, or
 * several at a time when `concurrency` says so), each iteration on its own
 * copy of the outputs; the first failing iteration stops the loop. Its
 * Collect node, when it has one, gets every iteration's last body output.
 */

const DEFAULT_MAX_ITERATIONS = 1000;
const DEFAULT_PARALLELISM = 5;

export async function runForEach(ctx: RunContext, node: WorkflowNode): Promise<NodeResult> {
  const { graph: g, row, control, outputs, states, handled } = ctx;
  const { log } = control;
  const { body, collectId } = forEachBody(g, node.id);
  body.forEach((id) => handled.add(id));
  const started = Date.now();
  const entry = (input: unknown) => ({ executionId: row.id, nodeId: node.id, nodeName: labelOf(node), nodeType: 'For Each', input });
  let config: Record<string, unknown>;
  let logId: string;
  try {
    config = resolveValue(node.data.config, scopeOf(ctx, outputs)) as Record<string, unknown>;
    // Measured before it is copied to be redacted: its templates can hold one large answer in many places.
    log.limit.check(config, 'input');
    logId = await log.started(entry(redactSecrets(config)));
  } catch (error) {
    // A template that does not resolve, or items over the run's data limit: the loop fails before its first iteration, naming why.
    if (!(error instanceof NodeError || error instanceof RunDataLimitError)) throw error;
    const output = { success: false, error: error.message };
    await log.finishedStep(entry(redactSecrets(node.data.config)), 'error', output, error.message, started, true);
    return output;
  }
  let items = config.arraySource;
  if (typeof items === 'string') {
    try {
      items = JSON.parse(items);
    } catch {
      /* reported below */
    }
  }
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
        g,
        id,
        (p) => local.get(p) ?? states.get(p),
        (p) => view.get(p),
      );
      if (!decision.run) {
        local.set(id, decision.state);
        continue;
      }
      const output = await runStep(ctx, bodyNode, view, { index, forEachNodeId: node.id });
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
  let output: NodeResult = iterationFailure
    ? { success: false, error: iterationFailure }
    : { success: true, data: { iterations: list.length, truncated: items.length > list.length }, iterations: list.length };
  if (collectId && output.success) {
    const collect = g.nodes.get(collectId)!;
    const collected = { success: true, data: { results, count: results.length }, results, count: results.length };
    const collectEntry = { executionId: row.id, nodeId: collectId, nodeName: labelOf(collect), nodeType: 'Collect', input: { forEachNodeId: node.id } };
    const refused = await log.finishedStep(collectEntry, 'success', collected, null, Date.now(), true);
    if (refused === undefined) {
      outputs.set(collectId, collected);
      states.set(collectId, 'done');
      ctx.lastSuccess = { nodeId: collectId, output: collected };
    } else {
      // The results together are over the run's data limit: the Collect, and so the loop, fail.
      states.set(collectId, 'failed');
      output = { success: false, error: `Collect "${labelOf(collect)}" (${collectId}) failed: ${refused}` };
    }
    handled.add(collectId);
  } else if (collectId) {
    states.set(collectId, 'failed');
    handled.add(collectId);
  }
  const refused = await log.finished(logId, output.success ? 'success' : 'error', output, output.success ? null : (output.error as string), started, contained);
  return refused === undefined ? output : { success: false, error: refused };
}
