import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { Challenge } from 'mppx';
import { toAtomicUnits } from './amount.ts';
import type { PaymentContext } from './context.ts';
import { MCP_MPP_CREDENTIAL, MCP_MPP_REQUIRED, MCP_X402_PAYMENT, PaymentRequiredError, type PaidResource } from './paid-call.ts';
import type { TokenInfo } from './settings.ts';

/**
 * The dual 402: one answer that offers both protocols, the x402 v2
 * `PAYMENT-REQUIRED` challenge (with Bazaar discovery metadata) and the MPP
 * `WWW-Authenticate: Payment` challenge, plus a plain-words `howToPay`. With
 * a reason, it is the refusal of a payment that was presented.
 */

/** The x402 offer for a resource: its price in the token's atomic units, paid to the listing's payee. */
export function requirementsFor(ctx: PaymentContext, resource: PaidResource, token: TokenInfo): Promise<PaymentRequirements[]> {
  return ctx.resourceServer.buildPaymentRequirements({
    scheme: 'exact',
    network: ctx.settings.network,
    payTo: resource.payTo,
    price: { amount: toAtomicUnits(resource.price, token.decimals), asset: token.address, extra: { name: token.name, version: token.version } },
    maxTimeoutSeconds: 300,
  });
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

export async function paymentRequired(ctx: PaymentContext, resource: PaidResource, reason?: string): Promise<PaymentRequiredError> {
  const { settings, resourceServer } = ctx;
  const token = await ctx.ready();
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
  const challenge = await ctx.mppFor(token, resource.payTo).challenge.evm.charge({ amount: resource.price, description: resource.title, scope: resource.slug });
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
    mpp: { challenges: [challenge] },
  };
  return new PaymentRequiredError(
    message,
    Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'error')),
    { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(x402), 'WWW-Authenticate': Challenge.serialize(challenge), 'Cache-Control': 'no-store' },
    { structuredContent: body, meta: { [MCP_MPP_REQUIRED]: { challenges: [challenge] } } },
  );
}
