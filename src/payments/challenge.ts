import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { Challenge } from 'mppx';
import { toAtomicUnits } from './amount.ts';
import type { PaymentContext } from './context.ts';
import { MCP_MPP_CREDENTIAL, MCP_MPP_REQUIRED, MCP_X402_PAYMENT, PaymentRequiredError, type PaidResource } from './paid-call.ts';
import type { TokenInfo } from './settings.ts';
import { recentAnswers, type RecentAnswers } from './recent-answers.ts';
import { deepFreeze } from '../immutable.ts';

/**
 * The dual 402: one answer that offers both protocols, the x402 v2
 * `PAYMENT-REQUIRED` challenge (with Bazaar discovery metadata) and the MPP
 * `WWW-Authenticate: Payment` challenge, plus a plain-words `howToPay`. With
 * a reason, it is the refusal of a payment that was presented.
 */

/**
 * Every unpaid call of a paid workflow gets the same x402 offer (its price,
 * payee and token do not change between calls), and every paid call matches
 * its payment against it: building it (x402's requirements, its 402 body and
 * encoded header) took a good part of a 402's CPU. So one payments service
 * builds each offer once per OFFER_REUSE_MS and answers from it. Nothing in
 * it expires or is single-use (x402's authorization nonce is the payer's);
 * replays are refused by the payment record. The MPP challenge is not kept
 * (see paymentRequired).
 */
const OFFER_REUSE_MS = 10_000;
/** Offers kept per payments service (one per paid listing and price); the oldest go first. */
const OFFERS_MAX = 1_000;

const offersOf = new WeakMap<PaymentContext, { requirements: RecentAnswers<PaymentRequirements[]>; x402: RecentAnswers<X402Offer> }>();
function offers(ctx: PaymentContext) {
  let kept = offersOf.get(ctx);
  if (!kept) offersOf.set(ctx, (kept = { requirements: recentAnswers(OFFERS_MAX), x402: recentAnswers(OFFERS_MAX) }));
  return kept;
}
const reuseUntil = (now: number) => now + OFFER_REUSE_MS;

/** The x402 offer for a resource: its price in the token's atomic units, paid to the listing's payee. */
export function requirementsFor(ctx: PaymentContext, resource: PaidResource, token: TokenInfo): Promise<PaymentRequirements[]> {
  const build = () =>
    ctx.resourceServer.buildPaymentRequirements({
      scheme: 'exact',
      network: ctx.settings.network,
      payTo: resource.payTo,
      price: { amount: toAtomicUnits(resource.price, token.decimals), asset: token.address, extra: { name: token.name, version: token.version } },
      maxTimeoutSeconds: 300,
    });
  return offers(ctx).requirements.get(JSON.stringify([resource.payTo, resource.price, token]), build, reuseUntil);
}

/** Bazaar discovery metadata: how to call the resource and what it returns. */
const bazaar = (resource: PaidResource) => ({
  info: {
    input: { type: 'http', method: 'POST', bodyType: 'json' },
    output: { type: 'json', fields: resource.outputFields },
  },
  schema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: {
      input: { type: 'object', properties: { type: { const: 'http' }, method: { const: 'POST' }, bodyType: { const: 'json' }, body: resource.inputSchema } },
      output: { type: 'object' },
    },
  },
});

/** The x402 half of a 402 and everything in its body but the MPP challenge (deeply frozen: a kept one is shared). */
interface X402Offer {
  message: string;
  /** The JSON body without `mpp`. */
  body: Record<string, unknown>;
  paymentRequiredHeader: string;
}

/**
 * The 402 for a resource. Its x402 half is the same for OFFER_REUSE_MS when no payment was refused (built
 * afresh with the reason when one was). The MPP challenge is made for every 402: mppx's client derives the
 * payment's EIP-3009 nonce from the challenge, so a reused challenge would make a payer's next payment a
 * replay of its last one.
 */
export async function paymentRequired(ctx: PaymentContext, resource: PaidResource, reason?: string): Promise<PaymentRequiredError> {
  const token = await ctx.ready();
  const offer = reason
    ? await x402Offer(ctx, resource, token, reason)
    : await offers(ctx).x402.get(JSON.stringify([resource, token]), () => x402Offer(ctx, resource, token), reuseUntil);
  const challenge = await ctx.mppFor(token, resource.payTo).challenge.evm.charge({ amount: resource.price, description: resource.title, scope: resource.slug });
  const body = { ...offer.body, mpp: { challenges: [challenge] } };
  return new PaymentRequiredError(
    offer.message,
    Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'error')),
    { 'PAYMENT-REQUIRED': offer.paymentRequiredHeader, 'WWW-Authenticate': Challenge.serialize(challenge), 'Cache-Control': 'no-store' },
    { structuredContent: body, meta: { [MCP_MPP_REQUIRED]: { challenges: [challenge] } } },
  );
}

async function x402Offer(ctx: PaymentContext, resource: PaidResource, token: TokenInfo, reason?: string): Promise<X402Offer> {
  const { settings, resourceServer } = ctx;
  const accepts = await requirementsFor(ctx, resource, token);
  const message = reason
    ? `Payment refused: ${reason}. Nothing was run or charged; pay ${resource.price} USD with a fresh payment.`
    : `Payment required: ${resource.slug} costs ${resource.price} USD per call.`;
  const x402: PaymentRequired = await resourceServer.createPaymentRequiredResponse(
    accepts,
    { url: resource.url, description: resource.description, mimeType: 'application/json' },
    message,
    { bazaar: bazaar(resource) },
  );
  const offer = accepts[0]!;
  const body = {
    ...x402,
    ...(reason ? { reason } : {}),
    price: { mode: 'fixed', amount: resource.price, currency: 'USD' },
    offers: [
      {
        protocol: 'x402',
        scheme: offer.scheme,
        network: offer.network,
        asset: offer.asset,
        amount: offer.amount,
        payTo: offer.payTo,
        challengeHeader: 'PAYMENT-REQUIRED',
        retryHeader: 'PAYMENT-SIGNATURE',
        mcpMetaKey: MCP_X402_PAYMENT,
      },
      {
        protocol: 'mpp',
        method: 'evm',
        intent: 'charge',
        currency: 'USDC',
        asset: token.address,
        amount: offer.amount,
        recipient: resource.payTo,
        chainId: settings.chainId,
        challengeHeader: 'WWW-Authenticate',
        retryHeader: 'Authorization: Payment <credential>',
        mcpMetaKey: MCP_MPP_CREDENTIAL,
      },
    ],
    howToPay:
      `Sign an EIP-3009 transferWithAuthorization of ${offer.amount} atomic units (${resource.price} USD) of ${token.address} on ${settings.network} to ${resource.payTo}, then repeat this exact request with ONE of: ` +
      `the x402 header PAYMENT-SIGNATURE (e.g. @x402/fetch wrapFetchWithPayment) or the MPP header Authorization: Payment (e.g. mppx/client). Sending both is a 400.`,
  };
  return deepFreeze({ message, body, paymentRequiredHeader: encodePaymentRequiredHeader(x402) });
}
