import { BaseError } from 'viem';
import { isRpcUnreachable, RpcUnavailableError } from '../../../chains/rpc-errors.ts';
import { ServiceError } from '../../../errors.ts';
import type { PreparedWrite } from '../../../onchain/prepared-write.ts';
import { guardedSend, type WriteOutcome } from '../../../onchain/guarded-send.ts';
import { transactionLink } from '../../../chains/catalog.ts';
import { receiptError } from '../../../onchain/receipts.ts';
import { NodeError, type NodeResult, type NodeRunContext } from '../types.ts';

/**
 * Sends a prepared write from a workflow step through the one guarded write
 * path (spend cap with source `workflow` and this execution's id, stablecoin
 * limit, sign → record the hash on the execution → broadcast → receipt).
 * Only a verified successful receipt is a successful step; anything else
 * fails the step, naming the hash when one exists.
 */
export async function sendFromWorkflow(write: PreparedWrite, ctx: NodeRunContext): Promise<NodeResult> {
  const { services } = ctx;
  const chainId = write.chain.chainId;
  let outcome: WriteOutcome;
  try {
    outcome = await guardedSend(
      services,
      { organizationId: ctx.organizationId, chainId, request: write.request, abi: write.abi, gasLimitMultiplier: write.gasLimitMultiplier },
      {
        source: 'workflow',
        executionId: ctx.executionId,
        // Before broadcast: a crash after this point leaves the hash on the execution for verification.
        onSigned: (hash) => ctx.recordTransaction({ hash, chainId, network: write.chain.id }),
      },
    );
  } catch (error) {
    if (error instanceof ServiceError) {
      const detail = typeof error.details.message === 'string' ? ` ${error.details.message}` : '';
      throw new NodeError(`${error.message}.${detail} Nothing was sent.`, { code: error.code });
    }
    const code = error instanceof RpcUnavailableError || isRpcUnreachable(error) ? 'rpc_unavailable' : 'chain_unavailable';
    throw new NodeError(
      `${write.chain.name} (${chainId}) could not be reached to send this transaction; nothing was signed (${error instanceof BaseError ? error.shortMessage : 'RPC unreachable'}). This is not a revert.`,
      { code },
    );
  }

  if (outcome.kind === 'refused') throw new NodeError(outcome.error, { code: outcome.code });
  const { receipt, hash } = outcome;
  if (receipt.receiptStatus === 'success') {
    return {
      success: true,
      transactionHash: hash,
      gasUsed: receipt.gasUsedWei,
      gasUsedUnits: receipt.gasUsed,
      effectiveGasPrice: receipt.effectiveGasPrice,
      transactionLink: transactionLink(services.chains, chainId, hash),
    };
  }
  const message =
    receiptError([receipt]) ??
    `Transaction ${hash} was sent but its receipt could not be read from ${write.chain.name} (${chainId}); the run's verification settles it. Check it before sending again.`;
  throw new NodeError(message, { transactionHash: hash, receiptStatus: receipt.receiptStatus ?? null });
}
