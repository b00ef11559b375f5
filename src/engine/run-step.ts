import type { WorkflowNode } from './graph.ts';
import { appendTransactionHash, type TransactionHashEntry } from './executions.ts';
import { scopeOf, type RunContext } from './run-context.ts';
import { actionTypeOf, labelOf } from './run-graph.ts';
import { NodeError, type NodeResult } from './runners/types.ts';
import { resolveStepConfig } from './step-config.ts';
import { stepLog, type Iteration } from './step-log.ts';
import { engineTurns } from './turn-share.ts';

/**
 * Runs one action node: resolves its config against `view`, logs it, calls
 * its runner under the run's signal and a per-step deadline, and records any
 * transaction hash before broadcast. A failure, thrown or reported, becomes
 * `{success: false, error}`; it never throws.
 */

const NODE_TIMEOUT_MS = 5 * 60_000;

export async function runStep(ctx: RunContext, node: WorkflowNode, view: Map<string, unknown>, iteration?: Iteration): Promise<NodeResult> {
  // Inline steps share the event loop with every other run and request (turn-share.ts).
  const turn = engineTurns.awaitTurn();
  if (turn) await turn;
  const { deps, row, control } = ctx;
  const actionType = actionTypeOf(node);
  const log = stepLog(ctx, node, iteration);
  try {
    const { actionType: _type, ...rawConfig } = node.data.config;
    const config = resolveStepConfig(actionType, rawConfig, scopeOf(ctx, view));
    const secrets = log.resolved(config);
    if (!iteration && secrets.length > 0) ctx.echoes.set(node.id, secrets);
    await log.start();

    if (!actionType) throw new NodeError(`Node "${labelOf(node)}" (${node.id}) has no actionType; configure it with one of the keys from list_action_schemas.`);
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
        await appendTransactionHash(deps.services.store, row.id, entry);
        ctx.transactions.push(entry);
      },
    });
    const output: NodeResult = result.success ? result : { ...result, success: false, error: result.error ?? 'The step reported failure without a message.' };
    // An output past the run's data limit is not kept: the step fails with the reason instead.
    const refused = await log.finish(output.success ? 'success' : 'error', output, output.success ? null : (output.error as string));
    return refused === undefined ? output : { success: false, error: refused };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const output: NodeResult = { success: false, error: message };
    await log.finish('error', output, message);
    return output;
  }
}
