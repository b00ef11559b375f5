import type { SettleResponse } from '@x402/core/types';
import type { Receipt } from 'mppx';
import { ServiceError } from '../errors.ts';
import type { Store } from '../store/db.ts';

/**
 * What a paid call exchanges with the payments service: the resource it pays
 * for, the credentials as they arrived, the gate that holds its run until
 * settlement, the receipt, the 402 it gets instead, and the MCP `_meta` keys
 * both protocols use.
 */

export const MCP_X402_PAYMENT = 'x402/payment';
export const MCP_X402_RESPONSE = 'x402/payment-response';
export const MCP_MPP_CREDENTIAL = 'org.paymentauth/credential';
export const MCP_MPP_RECEIPT = 'org.paymentauth/receipt';
export const MCP_MPP_REQUIRED = 'org.paymentauth/payment-required';

export interface PaidResource {
  slug: string;
  title: string;
  description: string;
  /** Decimal USD. */
  price: string;
  payTo: `0x${string}`;
  /** Absolute URL of the call (x402 `resource.url`). */
  url: string;
  inputSchema: Record<string, unknown>;
  outputFields: Record<string, string>;
}

/** Credentials as they arrived: header strings over REST, `_meta` objects over MCP. */
export interface PaymentCredentials {
  x402?: unknown;
  mpp?: unknown;
}

export interface RunGate {
  /** Creates the execution without letting it run, in `via` (the transaction that claims the payment); throws when the run cannot start. */
  prepare(via: Store): Promise<string>;
  /** Payment settled: the run may start; `alongside` (the payment's settled record) is written with the release. */
  release(executionId: string, alongside?: (via: Store) => Promise<unknown>): Promise<void>;
  /** Settlement failed: the run never starts. */
  abandon(executionId: string, reason: string): Promise<void>;
  /**
   * Whether the execution a replayed payment paid for was asked with this request's inputs. A settled payment's
   * signature is public calldata, so "the exact signed payment" proves nothing about the caller: a replay gets the
   * original answer only for the same call, and only for REPLAY_WINDOW_MS.
   */
  isSameCall(executionId: string): Promise<boolean>;
}

export type PaymentReceipt = { protocol: 'x402'; settlement: SettleResponse } | { protocol: 'mpp'; receipt: Receipt.Receipt };

export type ChargeResult =
  | {
      executionId: string;
      /** The same payment was presented before: its original execution, nothing run or charged again. */
      replayed: boolean;
      receipt: PaymentReceipt;
      pending?: undefined;
    }
  | {
      executionId: string;
      replayed: boolean;
      /** Sent, but not known to be mined yet: the run starts once the chain says it paid (src/catalog/pending-payments.ts). */
      pending: { transaction: string | undefined };
      receipt?: undefined;
    };

/** A settlement sent but not known to be mined when its wait ran out: the payment is resolved from the chain instead of failed. */
export class SettlementPendingError extends Error {
  constructor(readonly transaction: string | undefined) {
    super(`the settlement transaction${transaction ? ` ${transaction}` : ''} is not mined yet`);
  }
}

/** A 402 that carries what each edge needs: headers (REST), structured content and `_meta` (MCP). */
export class PaymentRequiredError extends ServiceError {
  constructor(
    message: string,
    details: Record<string, unknown>,
    headers: Record<string, string>,
    readonly mcp: { structuredContent: Record<string, unknown>; meta: Record<string, unknown> },
  ) {
    super(402, 'payment_required', message, details, headers);
  }
}

/** Small readers the charge modules share for credentials of unknown shape. */
export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * A refusal's reason as a payer reads it: its first paragraph, on one line. viem's errors (which x402 and mppx
 * pass on) follow it with the call's arguments, a docs link and viem's version, which tell a payer nothing.
 */
export const refusalText = (text: string) =>
  text
    .split(/\n\s*\n/)[0]!
    .replace(/\s*\n\s*/g, ' ')
    .trim();

/** An authorization's validBefore as recorded (unix seconds), when it is one. */
export const validBeforeOf = (value: unknown): string | null =>
  typeof value === 'string' && /^\d{1,20}$/.test(value) ? value : typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : null;
