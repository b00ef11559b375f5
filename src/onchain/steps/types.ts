import type { PreparedWrite } from '../prepared-write.ts';
import type { Services } from '../../services.ts';

/**
 * A web3 or protocol action as two halves that both callers share: a read
 * returns its output fields; a write only *prepares* the transaction (chain,
 * to, data, value). Who sends it differs: a workflow step sends through
 * guardedSend with source `workflow` (src/engine/runners/web3/send.ts), POST /api/execute/node through
 * direct execution's executeWrite (src/execute/node.ts). Neither half signs.
 *
 * Bad config throws a 400 ServiceError naming the field and the value; the
 * workflow adapter (src/engine/runners/web3) turns it into the node's error.
 */

export interface Web3Env {
  services: Services;
  organizationId: string;
}

export type Web3Step =
  | { kind: 'read'; read(config: Record<string, unknown>, env: Web3Env): Promise<Record<string, unknown>> }
  | { kind: 'write'; prepare(config: Record<string, unknown>, env: Web3Env): Promise<PreparedWrite> };
