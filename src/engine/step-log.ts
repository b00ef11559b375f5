import type { WorkflowNode } from './graph.ts';
import type { RunContext } from './run-context.ts';
import { actionTypeOf, labelOf } from './run-graph.ts';
import type { LogEntry } from './run-log.ts';
import { redact, redactEchoes, redactOutput } from '../text/redact.ts';

/**
 * One step's log rows, redacted: the input as resolved (secrets hidden), and
 * the output and error with those secrets hidden again wherever they repeat.
 */

/**
 * Actions whose effects stay inside the engine (pure computation, or code in
 * the sandbox without host access): their log rows may be committed in
 * batches (see run-log.ts), and they never show as running.
 */
export const CONTAINED_ACTIONS: ReadonlySet<string> = new Set(['Condition', 'math/aggregate']);

export interface Iteration {
  index: number;
  forEachNodeId: string;
}

export function stepLog(ctx: RunContext, node: WorkflowNode, iteration: Iteration | undefined) {
  const { log } = ctx.control;
  const actionType = actionTypeOf(node);
  const contained = CONTAINED_ACTIONS.has(actionType);
  const started = Date.now();
  // Set once the config is resolved; a step failing before that logs its stored config, redacted alike.
  let logInput: unknown;
  // The input's secrets, hidden again wherever the step's output or error repeats them.
  let secrets: string[] = [];
  let logId: string | undefined;
  const entry = (input: unknown): LogEntry => ({
    executionId: ctx.row.id,
    nodeId: node.id,
    nodeName: labelOf(node),
    nodeType: actionType || 'action',
    input,
    iterationIndex: iteration?.index ?? null,
    forEachNodeId: iteration?.forEachNodeId ?? null,
  });
  return {
    /** Logs the resolved config (redacted) as the step's input; returns the secrets it held. */
    resolved(config: Record<string, unknown>): string[] {
      ({ value: logInput, secrets } = redact(config));
      return secrets;
    },
    /**
     * Top-level steps that may act outside the engine show as running while they run; others are
     * written once, finished. Nothing acts outside the engine before the log of everything before it is committed.
     */
    async start(): Promise<void> {
      if (!contained && !iteration) logId = await log.started(entry(logInput));
      else if (!contained) await log.flush();
    },
    finish(status: string, result: unknown, message: string | null): Promise<void> {
      if (logInput === undefined) ({ value: logInput, secrets } = redact(node.data.config));
      const output = redactOutput(result, secrets);
      const error = message === null || secrets.length === 0 ? message : redactEchoes(message, secrets);
      return logId
        ? log.finished(logId, status, output, error, started, contained)
        : log.finishedStep(entry(logInput), status, output, error, started, contained);
    },
  };
}

/** A node its parents did not let run, logged as cancelled with the reason. */
export async function logSkipped(ctx: RunContext, node: WorkflowNode, reason: string): Promise<void> {
  const entry = { executionId: ctx.row.id, nodeId: node.id, nodeName: labelOf(node), nodeType: actionTypeOf(node) || 'action', input: null };
  await ctx.control.log.finishedStep(entry, 'cancelled', { success: false, skipped: true, reason }, null, Date.now(), true);
}
