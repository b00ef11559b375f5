import type { WorkflowExecutionsTable } from '../store/schema.ts';
import type { WorkflowGraph } from './graph.ts';
import type { Completion } from './executions.ts';
import type { ExecutorDeps, RunContext, RunControl } from './run-context.ts';
import { activation, actionTypeOf, indexGraph, labelOf, reachableInOrder } from './run-graph.ts';
import { runForEach } from './run-for-each.ts';
import { runStep } from './run-step.ts';
import { settleCancelled, settleFinished } from './settle-run.ts';
import { logSkipped } from './step-log.ts';
import { redactEchoes } from '../text/redact.ts';

/**
 * Runs one claimed execution: topological order from the trigger
 * (run-graph.ts), each step run and logged (run-step.ts, step-log.ts), For
 * Each bodies run per item (run-for-each.ts), and the run settled once its
 * transactions are verified (settle-run.ts). A failing node stops its branch
 * and the run ends `error` with that node's message; the cancel flag is read
 * at every node boundary.
 */

class Cancelled extends Error {}

export async function runExecution(deps: ExecutorDeps, row: WorkflowExecutionsTable, control: RunControl): Promise<Completion> {
  const graph = JSON.parse(row.graph ?? '{"nodes":[],"edges":[]}') as WorkflowGraph;
  const input = JSON.parse(row.input ?? '{}') as Record<string, unknown>;
  const ctx: RunContext = {
    deps,
    row,
    control,
    graph: indexGraph(graph),
    outputs: new Map(),
    states: new Map(),
    handled: new Set(),
    echoes: new Map(),
    transactions: JSON.parse(row.transaction_hashes ?? '[]'),
  };
  const { graph: g, outputs, states } = ctx;
  let failure: { nodeId: string; message: string } | undefined;

  // The trigger's output: {success, data: {triggered, triggeredAt, timestamp, ...input}}.
  const trigger = graph.nodes.find((n) => n.type === 'trigger');
  if (!trigger) return { status: 'error', error: 'The workflow has no trigger node.', output: null };
  const now = new Date();
  const triggerOutput = { success: true, data: { triggered: true, triggeredAt: now.toISOString(), timestamp: now.getTime(), ...input } };
  // Steps that finish as they start (trigger, skipped nodes, Collect) are logged in one write.
  const triggerEntry = { executionId: row.id, nodeId: trigger.id, nodeName: labelOf(trigger), nodeType: 'trigger', input };
  const refused = await control.log.finishedStep(triggerEntry, 'success', triggerOutput, null, now.getTime(), true);
  // An input over the run's data limit (a deployment whose request bodies may be larger): nothing runs.
  if (refused) return { status: 'error', error: `The run's input is over its data limit: ${refused}`, output: null };
  outputs.set(trigger.id, triggerOutput);
  states.set(trigger.id, 'done');

  try {
    for (const nodeId of reachableInOrder(g, trigger.id)) {
      if (ctx.handled.has(nodeId)) continue;
      const node = g.nodes.get(nodeId)!;
      if (await control.checkpoint(nodeId)) throw new Cancelled();
      const decision = activation(
        g,
        nodeId,
        (id) => states.get(id),
        (id) => outputs.get(id),
      );
      if (!decision.run) {
        states.set(nodeId, decision.state);
        if (decision.state === 'skipped') await logSkipped(ctx, node, decision.reason);
        continue;
      }
      const output = actionTypeOf(node) === 'For Each' ? await runForEach(ctx, node) : await runStep(ctx, node, outputs);
      outputs.set(nodeId, output);
      states.set(nodeId, output.success ? 'done' : 'failed');
      if (output.success) ctx.lastSuccess = { nodeId, output };
      else failure ??= { nodeId, message: redactEchoes(`Node "${labelOf(node)}" (${nodeId}) failed: ${output.error}`, ctx.echoes.get(nodeId) ?? []) };
      if (control.signal.aborted) throw new Cancelled();
    }
    if (await control.checkpoint(null)) throw new Cancelled();
  } catch (error) {
    if (error instanceof Cancelled || control.signal.aborted) return settleCancelled(ctx);
    throw error;
  }
  return settleFinished(ctx, failure);
}
