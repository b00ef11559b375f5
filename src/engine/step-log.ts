import type { WorkflowNode } from './graph.ts';
import type { RunContext } from './run-context.ts';
import { actionTypeOf, labelOf } from './run-graph.ts';
import type { LogEntry } from './run-log.ts';
import { redact, redactEchoes, redactOutput } from '../text/redact.ts';

/**
 * One step's log rows, redacted: the input as resolved (secrets hidden), and
 * the output and error with those secrets hidden again wherever they repeat.
 * Both count against the run's data limit (run-data-limit.ts): an input that
 * does not fit fails the step before it runs, an output that does not fit
 * fails it after, and either way its row says why.
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
  // The input as text, made (and counted) once the step is about to run.
  let inputText: string | undefined;
  const entry = (): LogEntry => ({
    executionId: ctx.row.id,
    nodeId: node.id,
    nodeName: labelOf(node),
    nodeType: actionType || 'action',
    input: logInput,
    ...(inputText === undefined ? {} : { inputText }),
    iterationIndex: iteration?.index ?? null,
    forEachNodeId: iteration?.forEachNodeId ?? null,
  });
  return {
    /** Logs the resolved config (redacted) as the step's input; returns the secrets it held. */
    resolved(config: Record<string, unknown>): string[] {
      // Measured before it is copied to be redacted: templates can quote one large answer in many places.
      log.limit.check(config, 'input');
      ({ value: logInput, secrets } = redact(config));
      return secrets;
    },
    /**
     * Top-level steps that may act outside the engine show as running while they run; others are
     * written once, finished. Nothing acts outside the engine before the log of everything before it is committed.
     */
    async start(): Promise<void> {
      inputText = log.limit.serialize(logInput, 'input');
      if (!contained && !iteration) logId = await log.started(entry());
      else if (!contained) await log.flush();
    },
    /** Writes the step's row; when its output does not fit the run's data limit, writes the refusal instead and returns it. */
    async finish(status: string, result: unknown, message: string | null): Promise<string | undefined> {
      if (logInput === undefined) ({ value: logInput, secrets } = redact(node.data.config));
      const output = redactOutput(result, secrets);
      const error = message === null || secrets.length === 0 ? message : redactEchoes(message, secrets);
      return logId ? log.finished(logId, status, output, error, started, contained) : log.finishedStep(entry(), status, output, error, started, contained);
    },
  };
}

/** A node its parents did not let run, logged as cancelled with the reason. */
export async function logSkipped(ctx: RunContext, node: WorkflowNode, reason: string): Promise<void> {
  const entry = { executionId: ctx.row.id, nodeId: node.id, nodeName: labelOf(node), nodeType: actionTypeOf(node) || 'action', input: null };
  await ctx.control.log.finishedStep(entry, 'cancelled', { success: false, skipped: true, reason }, null, Date.now(), true);
}
