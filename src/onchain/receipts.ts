import type { VerifiedReceipt } from '../chains/transactions.ts';

/** Why a set of receipts is not a success, in words a caller can act on; undefined when all succeeded. */
export function receiptError(receipts: readonly VerifiedReceipt[]): string | undefined {
  const bad = receipts.find((r) => r.receiptStatus && r.receiptStatus !== 'success');
  if (!bad) return undefined;
  if (bad.receiptStatus === 'reverted') return `Transaction ${bad.hash} reverted on chain (block ${bad.blockNumber}).`;
  if (bad.receiptStatus === 'not_found') return `Transaction ${bad.hash} was not found on chain; it was not mined. Check the wallet before sending again.`;
  return `Transaction ${bad.hash} was not confirmed in time; it may still be mined. Poll the status before sending again.`;
}
