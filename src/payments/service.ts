import { x402ResourceServer } from '@x402/core/server';
import { encodePaymentResponseHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { Receipt } from 'mppx';
import type { PublicClient } from 'viem';
import type { Store } from '../store/db.ts';
import type { PaymentsTable } from '../store/schema.ts';
import { settlementOutcome, type SettlementOutcome } from './settlement-outcome.ts';
import { ServiceError } from '../errors.ts';
import { paymentRequired } from './challenge.ts';
import { chargeMpp } from './charge-mpp.ts';
import { chargeX402 } from './charge-x402.ts';
import type { PaymentContext } from './context.ts';
import type { Facilitator } from './facilitator.ts';
import { mppServers } from './mpp-server.ts';
import {
  MCP_MPP_RECEIPT,
  MCP_X402_RESPONSE,
  type ChargeResult,
  type PaidResource,
  type PaymentCredentials,
  type PaymentReceipt,
  type RunGate,
} from './paid-call.ts';
import { readTokenInfo, type PaymentSettings, type TokenInfo } from './settings.ts';
import { pricingFor, type Pricing } from './pricing.ts';

export type { Pricing } from './pricing.ts';

/**
 * Pay-per-call: the dual 402 (challenge.ts), verification (charge-x402.ts,
 * charge-mpp.ts), and settlement (settle.ts). This module wires them to one
 * facilitator and payment token and picks the protocol a call paid with.
 *
 * Order of a paid call, failing closed at every step:
 *   credential → replay check (authorization already recorded → original execution)
 *   → verify with the facilitator → claim the payment record
 *   → create the run without letting it start → settle → let the run start.
 * A run that cannot be created leaves the payment unsettled; a settlement
 * that fails abandons the run, which never executes.
 */

export interface PaymentsService {
  settings: PaymentSettings;
  /** The in-process facilitator's gas-paying address; undefined with an HTTP facilitator. */
  facilitatorAddress: `0x${string}` | undefined;
  pricing(price: string): Pricing;
  charge(resource: PaidResource, credentials: PaymentCredentials, run: RunGate): Promise<ChargeResult>;
  /** Response headers (REST) and result `_meta` (MCP) for a receipt. */
  receiptHeaders(receipt: PaymentReceipt): Record<string, string>;
  receiptMeta(receipt: PaymentReceipt): Record<string, unknown>;
  /** What the payment chain (read through `client`) says about a payment whose settlement outcome was not known (settlement-outcome.ts); undefined: not decided yet. */
  settlementOutcome(client: PublicClient, row: PaymentsTable): Promise<SettlementOutcome>;
}

export function createPaymentsService(deps: {
  store: Store;
  settings: PaymentSettings;
  facilitator: Facilitator;
  rpcUrl: string | undefined;
}): PaymentsService {
  const { store, settings, facilitator } = deps;
  const resourceServer = new x402ResourceServer(facilitator).register(settings.network, new ExactEvmScheme());
  let ready: Promise<TokenInfo> | undefined;

  /** Token metadata and the facilitator's supported kinds, once; a failure is retried on the next call. */
  function init(): Promise<TokenInfo> {
    if (!settings.token) {
      return Promise.reject(
        new ServiceError(
          503,
          'payments_unavailable',
          `Paid calls are not configured on this gateway: no payment token for chain ${settings.chainId}. The operator sets FLOWGATE_PAYMENT_TOKEN.`,
        ),
      );
    }
    ready ??= Promise.all([readTokenInfo(settings, deps.rpcUrl), resourceServer.initialize()])
      .then(([token]) => token)
      .catch((error) => {
        ready = undefined;
        console.error('[flowgate] payments are unavailable:', error);
        throw new ServiceError(
          503,
          'payments_unavailable',
          'The payment facilitator or payment chain is unreachable right now; nothing was charged. Retry later.',
        );
      });
    return ready;
  }

  const ctx: PaymentContext = {
    store,
    settings,
    resourceServer,
    ready: init,
    mppFor: mppServers(settings, facilitator),
    settlementPending: (payer, nonce) => facilitator.settlementPending?.(payer, nonce),
  };

  return {
    settings,
    facilitatorAddress: facilitator.signerAddress,
    pricing: (price) => pricingFor(settings, price),
    async charge(resource, credentials, run) {
      const hasX402 = credentials.x402 !== undefined && credentials.x402 !== null && credentials.x402 !== '';
      const hasMpp = credentials.mpp !== undefined && credentials.mpp !== null && credentials.mpp !== '';
      if (hasX402 && hasMpp) {
        throw new ServiceError(
          400,
          'conflicting_payment_credentials',
          'Send one payment credential, not two: either PAYMENT-SIGNATURE (x402) or Authorization: Payment (MPP). Nothing was run or charged.',
        );
      }
      if (hasX402) return chargeX402(ctx, resource, credentials.x402, run);
      if (hasMpp) return chargeMpp(ctx, resource, credentials.mpp, run);
      throw await paymentRequired(ctx, resource);
    },
    receiptHeaders(receipt): Record<string, string> {
      return receipt.protocol === 'x402'
        ? { 'PAYMENT-RESPONSE': encodePaymentResponseHeader(receipt.settlement) }
        : { 'Payment-Receipt': Receipt.serialize(receipt.receipt) };
    },
    receiptMeta(receipt) {
      return receipt.protocol === 'x402' ? { [MCP_X402_RESPONSE]: receipt.settlement } : { [MCP_MPP_RECEIPT]: receipt.receipt };
    },
    settlementOutcome,
  };
}
