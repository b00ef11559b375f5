import type { FacilitatorClient } from '@x402/core/server';
import { isRecord } from '../is-record.ts';

/**
 * Which settlements a facilitator left open: sent, or perhaps sent, and not
 * known to be mined. A charge asks after a settlement that did not succeed
 * (settlementPending), and an open one is resolved from the chain instead of
 * failed (src/catalog/pending-payments.ts), so a payer is never charged for a
 * call whose run was abandoned. Open:
 *  - an answer `settlement_pending` (x402's own reason: sent, not mined yet),
 *    with its transaction;
 *  - no answer, or one that is not the facilitator's (a timeout, a gateway's
 *    5xx page, a connection lost mid-request, an unreadable body): the
 *    facilitator may have sent the transfer before its answer was lost.
 * Closed (the payment fails as before): any answer the facilitator gave,
 * and a request that never reached it (refused connection, unknown host).
 */

/** At most this many open settlements remembered; a charge asks at once, so only a stuck caller leaves one behind. */
const OPEN_MAX = 10_000;

/** Connection errors that mean the request never reached the facilitator. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function openAfter(error: unknown): { transaction?: string } | undefined {
  if (!(error instanceof Error)) return {};
  // The facilitator's own refusal (x402's SettleError carries its settle response).
  if (error.name === 'SettleError') {
    const { errorReason, transaction } = error as Error & { errorReason?: string; transaction?: string };
    return errorReason === 'settlement_pending' ? (transaction ? { transaction } : {}) : undefined;
  }
  const code = isRecord(error.cause) ? error.cause.code : undefined;
  if (typeof code === 'string' && NOT_SENT.has(code)) return undefined;
  // HTTPFacilitatorClient's words for an answer that was not a settle response: a 4xx page is a refusal.
  if (/^Facilitator settle failed \(4\d\d\)/.test(error.message)) return undefined;
  return {};
}

const keyOf = (payer: string, nonce: string) => `${payer}:${nonce}`.toLowerCase();

function authorizationOf(payload: unknown): { from: string; nonce: string } | undefined {
  const inner = isRecord(payload) && isRecord(payload.payload) ? payload.payload : undefined;
  const authorization = inner && isRecord(inner.authorization) ? inner.authorization : undefined;
  return authorization && typeof authorization.from === 'string' && typeof authorization.nonce === 'string'
    ? { from: authorization.from, nonce: authorization.nonce }
    : undefined;
}

export interface OpenSettlements {
  /** After a settlement that did not succeed: open (its transaction when known), or undefined; asked once. */
  settlementPending(payer: string, nonce: string): { transaction?: string } | undefined;
}

export function reportingOpenSettlements<F extends FacilitatorClient>(facilitator: F): F & OpenSettlements {
  const open = new Map<string, { transaction?: string }>();
  const remember = (key: string, value: { transaction?: string }) => {
    if (open.size >= OPEN_MAX) open.delete(open.keys().next().value!);
    open.set(key, value);
  };
  return {
    ...facilitator,
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    getSupported: () => facilitator.getSupported(),
    async settle(payload, requirements) {
      const authorization = authorizationOf(payload);
      const key = authorization && keyOf(authorization.from, authorization.nonce);
      try {
        const result = await facilitator.settle(payload, requirements);
        if (key && !result.success && result.errorReason === 'settlement_pending') remember(key, result.transaction ? { transaction: result.transaction } : {});
        else if (key) open.delete(key);
        return result;
      } catch (error) {
        const after = openAfter(error);
        if (key && after) remember(key, after);
        throw error;
      }
    },
    settlementPending(payer, nonce) {
      const key = keyOf(payer, nonce);
      const value = open.get(key);
      open.delete(key);
      return value;
    },
  };
}
