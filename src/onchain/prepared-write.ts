import type { Abi } from 'viem';
import type { ChainEntry } from '../chains/catalog.ts';
import type { TransactionRequest } from '../chains/transactions.ts';

/**
 * A transaction ready to send, nothing signed: what preparation (transfers,
 * contract calls, web3 steps) hands to a sender (direct execution's
 * executeWrite or a workflow step's sendFromWorkflow).
 */
export interface PreparedWrite {
  type: string;
  chain: ChainEntry;
  request: TransactionRequest;
  abi?: Abi;
  gasLimitMultiplier?: string;
  /** Extra fields stored as the record's `result` (the decoded call, say). */
  result?: Record<string, unknown>;
}
