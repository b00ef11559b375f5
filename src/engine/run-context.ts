import type { Services } from '../services.ts';
import type { WorkflowExecutionsTable } from '../store/schema.ts';
import type { TransactionHashEntry } from './executions.ts';
import { textBudget, type ResolveScope } from './resolve.ts';
import { labelOf, type NodeState, type RunGraph } from './run-graph.ts';
import type { RunLog } from './run-log.ts';
import type { NodeRunner } from './runners/types.ts';

/** What one run carries from node to node (executor.ts drives it; the step, For Each and settle modules read and extend it). */

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

export interface RunContext {
  deps: ExecutorDeps;
  row: WorkflowExecutionsTable;
  control: RunControl;
  graph: RunGraph;
  /** Each finished node's output, by node id (For Each iterations work on a copy). */
  outputs: Map<string, unknown>;
  states: Map<string, NodeState>;
  /** Nodes a For Each already ran (its body and Collect): the top-level walk passes them by. */
  handled: Set<string>;
  /** Each top-level step's input secrets: the run's result and error must not repeat them either (a published workflow's caller sees both). */
  echoes: Map<string, string[]>;
  /** Hashes recorded so far (from earlier attempts too), verified when the run settles. */
  transactions: TransactionHashEntry[];
  lastSuccess?: { nodeId: string; output: unknown };
}

/** The template scope over a view of node outputs. */
export const scopeOf = (ctx: RunContext, view: ReadonlyMap<string, unknown>): ResolveScope => ({
  outputs: view,
  labelOf: (id) => (ctx.graph.nodes.has(id) ? labelOf(ctx.graph.nodes.get(id)!) : undefined),
  now: new Date(),
  ...(ctx.control.log.limit.remaining === Infinity ? {} : { countText: textBudget(ctx.control.log.limit.remaining) }),
});
