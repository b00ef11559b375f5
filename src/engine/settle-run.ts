import type { Completion } from './executions.ts';
import type { RunContext } from './run-context.ts';
import { dataOf } from './run-graph.ts';
import { settleWithVerification } from './verify-transactions.ts';
import { redactEchoesIn } from '../text/redact.ts';

/**
 * How a run ends: its result is the last successful node's data (with that
 * step's input secrets hidden), and every claimed transaction hash is
 * verified before the status is final (verify-transactions.ts).
 */

const resultOf = (ctx: RunContext, last: { nodeId: string; output: unknown }) => ({
  result: redactEchoesIn(dataOf(last.output), ctx.echoes.get(last.nodeId) ?? []),
  nodeId: last.nodeId,
});

export function settleCancelled(ctx: RunContext): Promise<Completion> {
  return settleWithVerification(ctx.deps.services, {
    status: 'cancelled',
    error: 'Cancelled at a node boundary',
    output: ctx.lastSuccess ? resultOf(ctx, ctx.lastSuccess) : null,
    transactionHashes: ctx.transactions,
  });
}

/** The walk reached its end: `error` with the first failed node, else `success` once every hash is re-fetched and verified. */
export function settleFinished(ctx: RunContext, failure: { nodeId: string; message: string } | undefined): Promise<Completion> {
  const output = ctx.lastSuccess ? resultOf(ctx, ctx.lastSuccess) : { result: null };
  if (failure)
    return settleWithVerification(ctx.deps.services, {
      status: 'error',
      error: failure.message,
      output,
      errorContext: { nodeId: failure.nodeId },
      transactionHashes: ctx.transactions,
    });
  return settleWithVerification(ctx.deps.services, { status: 'success', output, transactionHashes: ctx.transactions });
}
