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
  /** After a failed settlement: whether it was sent but unmined when its wait ran out (its hash), per the facilitator. */
  settlementPending(payer: string, nonce: string): `0x${string}` | undefined;
}
