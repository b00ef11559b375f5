/**
 * Direct execution's public names, kept at their old path for the tool
 * registry. Each lives in a module with one job: preparation and reads in
 * src/onchain (shared with workflow steps), the caller in caller.ts,
 * simulation in simulate.ts, idempotent writes in write.ts, crash recovery
 * in recovery.ts.
 */
export { selectChain } from '../onchain/chain.ts';
export { jsonSafe } from '../onchain/json-safe.ts';
export type { PreparedWrite } from '../onchain/prepared-write.ts';
export { prepareTransfer, type TransferInput } from '../onchain/transfer.ts';
export { isRead, prepareContractCall, readCall, writeOf, type ContractCallInput, type PreparedCall } from '../onchain/contract-call.ts';
export { insufficientScopeToBroadcast, type DirectCaller, type DirectResponse } from './caller.ts';
export { executeWrite } from './write.ts';
