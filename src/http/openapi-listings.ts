import { toJsonSchema } from '../../tools/json-schema.ts';
import { runAnswerSchema } from '../catalog/call.ts';
import { calldataSchema } from '../catalog/calldata.ts';
import type { Listing } from '../catalog/listings.ts';
import type { PaymentsService } from '../payments/service.ts';

/**
 * /openapi.json's part generated from listings rather than the registry: one
 * operation per listed workflow at its concrete call path, with the
 * workflow's own request body schema. Paid ones carry `x-payment-info` and a
 * 402 response and use the `payment` security scheme; free ones declare
 * empty security (SPEC Authentication rule 5).
 */

// The answers' shapes are the zod schemas beside the call (src/catalog); only a listing's documented result fields are added here.
const calldata = toJsonSchema(calldataSchema, 'output');
const runAnswer = toJsonSchema(runAnswerSchema, 'output') as { properties: Record<string, unknown> };

const runResult = (listing: Listing) => ({
  ...runAnswer,
  properties: {
    ...runAnswer.properties,
    output: {
      type: 'object',
      properties: {
        result: {
          type: 'object',
          description: 'Documented result fields',
          properties: Object.fromEntries(Object.entries(listing.outputFields).map(([k, v]) => [k, { description: v }])),
        },
      },
    },
  },
});

const errorRef = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

export function paymentInfo(listing: Listing, payments: PaymentsService) {
  if (listing.price === null) return undefined;
  const { price, protocols } = payments.pricing(listing.price);
  return {
    price,
    offers: [
      { protocol: 'x402', intent: 'charge', method: 'exact', amount: price.amount, currency: 'USD', network: protocols[0].network, asset: protocols[0].asset },
      { protocol: 'mpp', intent: 'charge', method: 'evm', amount: price.amount, currency: 'USDC', chainId: protocols[1].chainId },
    ],
  };
}

export function listingOperations(listings: readonly Listing[], payments: PaymentsService): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const listing of listings) {
    const info = paymentInfo(listing, payments);
    const required = Array.isArray(listing.inputSchema.required) && listing.inputSchema.required.length > 0;
    const responses: Record<string, unknown> = {
      '200': {
        description: listing.type === 'write' ? 'Unsigned transaction' : 'The run and, once finished, its result',
        content: { 'application/json': { schema: listing.type === 'write' ? calldata : runResult(listing) } },
      },
      '400': errorRef('Invalid input (`issues` names each field), malformed JSON, or both payment credentials at once'),
      '404': errorRef('No listed workflow has this slug'),
      '410': errorRef('`workflow_disabled`: the workflow behind the listing is disabled; nothing was run or charged'),
      '429': errorRef('Rate limited; wait `Retry-After` seconds'),
    };
    if (info) {
      responses['402'] = {
        description:
          'Payment required or refused (`reason`). Pay one of the offers and repeat the request with PAYMENT-SIGNATURE (x402) or Authorization: Payment (MPP).',
        headers: {
          'PAYMENT-REQUIRED': { description: 'x402 v2 PaymentRequired, base64 JSON', schema: { type: 'string' } },
          'WWW-Authenticate': { description: 'MPP challenge: Payment id=..., method="evm", intent="charge", request=...', schema: { type: 'string' } },
        },
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    paths[`/api/mcp/workflows/${listing.slug}/call`] = {
      post: {
        operationId: `call_${listing.slug.replace(/-/g, '_')}`,
        summary: listing.title,
        description: `${listing.description}${info ? ` Costs ${listing.price} USD per call.` : ' Free.'}`,
        tags: ['workflow calls'],
        security: info ? [{ payment: [] }] : [],
        ...(info ? { 'x-payment-info': info } : {}),
        'x-workflow-type': listing.type,
        'x-mcp-server': `/mcp/w/${listing.slug}`,
        requestBody: { required, content: { 'application/json': { schema: listing.inputSchema } } },
        responses,
      },
    };
  }
  return paths;
}

/** Only schemes the gateway accepts: no wallet sign-in (SIWX / CAIP-122) scheme until a route takes one. */
export const paymentSecuritySchemes = {
  payment: {
    type: 'http',
    scheme: 'Payment',
    description: 'Pay per call: answer the 402 with PAYMENT-SIGNATURE (x402 v2, exact, EIP-3009) or Authorization: Payment <credential> (MPP evm charge).',
  },
};
