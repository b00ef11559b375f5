import type { x402ResourceServer } from '@x402/core/server';
import type { Store } from '../store/db.ts';
import type { MppServer } from './mpp-server.ts';
import type { PaymentSettings, TokenInfo } from './settings.ts';

/** What the challenge, charge and settlement modules share within one payments service (built by service.ts). */
export interface PaymentContext {
  store: Store;
  settings: PaymentSettings;
  resourceServer: x402ResourceServer;
  /** Token metadata and the facilitator's supported kinds; rejects with 503 `payments_unavailable`. */
  ready(): Promise<TokenInfo>;
  mppFor(token: TokenInfo, recipient: `0x${string}`): MppServer;
  /** After a settlement that did not succeed: whether it is still open (sent, or perhaps sent), per open-settlements.ts. */
  settlementPending(payer: string, nonce: string): { transaction?: string } | undefined;
}
