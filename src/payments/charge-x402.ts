import { getAddress } from 'viem';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { paymentRequired, requirementsFor } from './challenge.ts';
import type { PaymentContext } from './context.ts';
import { isRecord } from '../is-record.ts';
import { errorText, refusalText, SettlementPendingError, validBeforeOf, type ChargeResult, type PaidResource, type RunGate } from './paid-call.ts';
import { authorizationKey, signatureHash } from './records.ts';
import { replay, settleAndRun } from './settle.ts';

/** A paid call with an x402 v2 `exact` payment: decode, check the route, replay check, match the offer, verify, then settle and run. */

const normalUrl = (url: unknown) => {
  try {
    return typeof url === 'string' ? new URL(url).href : undefined;
  } catch {
    return undefined;
  }
};

/**
 * x402 v2 payloads echo the challenge's `resource`; one made for another
 * route is refused. The EIP-3009 signature covers only the transfer (payer,
 * payee, value, validity, nonce), so this check stops honest clients and
 * leaked-but-unedited payments; the payment record (bound to the first slug
 * an authorization is presented to, see records.ts) is what holds against an
 * edited one.
 */
function wrongRoute(resource: PaidResource, payload: unknown): string | undefined {
  if (!isRecord(payload)) return 'the x402 payment is not a JSON object';
  const paidFor = isRecord(payload.resource) ? payload.resource.url : undefined;
  if (paidFor === undefined) return 'the x402 payment does not name the resource it pays for (resource.url); pay the challenge of this route';
  if (normalUrl(paidFor) !== normalUrl(resource.url))
    return `this payment was made for ${String(paidFor)}, not for ${resource.url}; pay this route's own challenge`;
  return undefined;
}

export async function chargeX402(ctx: PaymentContext, resource: PaidResource, credential: unknown, run: RunGate): Promise<ChargeResult> {
  const { settings, resourceServer } = ctx;
  let payload: PaymentPayload;
  try {
    payload = typeof credential === 'string' ? decodePaymentSignatureHeader(credential) : (credential as PaymentPayload);
  } catch {
    throw await paymentRequired(ctx, resource, 'the PAYMENT-SIGNATURE header is not base64-encoded x402 JSON');
  }
  const routeRefusal = wrongRoute(resource, payload);
  if (routeRefusal) throw await paymentRequired(ctx, resource, routeRefusal);
  const authorization = isRecord(payload) && isRecord(payload.payload) && isRecord(payload.payload.authorization) ? payload.payload.authorization : undefined;
  if (!authorization || typeof authorization.from !== 'string' || typeof authorization.nonce !== 'string' || !isRecord(payload.accepted)) {
    throw await paymentRequired(ctx, resource, 'the x402 payment is not an EIP-3009 exact payment (payload.authorization with from and nonce)');
  }
  const token = await ctx.ready();
  const key = authorizationKey({ chainId: settings.chainId, asset: token.address, payer: authorization.from, nonce: authorization.nonce });
  const sigHash = signatureHash(String(payload.payload.signature ?? ''));
  const seen = await replay(ctx, resource, key, sigHash, run);
  if (seen) return seen;

  const requirements = resourceServer.findMatchingRequirements(await requirementsFor(ctx, resource, token), payload);
  if (!requirements) throw await paymentRequired(ctx, resource, 'the payment does not match this offer (scheme, network, asset, amount or payTo differ)');
  const verified = await resourceServer.verifyPayment(payload, requirements).catch((error) => ({ isValid: false, invalidReason: errorText(error) }) as const);
  if (!verified.isValid) {
    const detail = refusalText([verified.invalidReason, 'invalidMessage' in verified ? verified.invalidMessage : undefined].filter(Boolean).join(': '));
    throw await paymentRequired(ctx, resource, `verification failed (${detail || 'invalid payment'})`);
  }
  return settleAndRun(
    ctx,
    resource,
    {
      key,
      signatureHash: sigHash,
      protocol: 'x402',
      slug: resource.slug,
      network: settings.network,
      asset: token.address,
      amount: requirements.amount,
      payer: getAddress(authorization.from),
      payTo: resource.payTo,
      validBefore: validBeforeOf(authorization.validBefore),
    },
    run,
    async () => {
      const open = () => ctx.settlementPending(authorization.from as string, authorization.nonce as string);
      const settlement = await resourceServer.settlePayment(payload, requirements).catch((error: unknown) => {
        const pending = open();
        throw pending ? new SettlementPendingError(pending.transaction) : error;
      });
      const pending = settlement.success ? undefined : open();
      if (pending) throw new SettlementPendingError(pending.transaction);
      if (!settlement.success) throw new Error([settlement.errorReason, settlement.errorMessage].filter(Boolean).join(': ') || 'settlement failed');
      return { transaction: settlement.transaction, receipt: { protocol: 'x402', settlement } };
    },
  );
}
