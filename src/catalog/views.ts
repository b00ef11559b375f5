import type { PaymentsService } from '../payments/service.ts';
import type { Listing } from './listings.ts';
import { callUrl } from './call.ts';

/** A listing as callers see it: contract, price and where to call it (REST and MCP). */
export function listingView(listing: Listing, payments: PaymentsService, baseUrl: string) {
  const pricing = listing.price === null ? null : payments.pricing(listing.price);
  return {
    slug: listing.slug,
    title: listing.title,
    description: listing.description,
    type: listing.type,
    chainId: listing.chainId,
    workflowId: listing.workflowId,
    inputSchema: listing.inputSchema,
    outputFields: listing.outputFields,
    free: pricing === null,
    price: pricing?.price ?? null,
    protocols: pricing?.protocols ?? [],
    protocolsUsed: listing.protocols,
    call: { method: 'POST' as const, url: callUrl(baseUrl, listing.slug) },
    mcpUrl: `${baseUrl}/mcp/w/${listing.slug}`,
  };
}

/** What an agent reads in a per-workflow MCP tool: what it does, what it takes, what it returns, what it costs. */
export function toolDescription(listing: Listing): string {
  const fields = Object.entries(listing.outputFields)
    .map(([name, type]) => `${name} (${type})`)
    .join(', ');
  const price =
    listing.price === null
      ? 'Free.'
      : `Costs ${listing.price} USD per call: an unpaid call returns a payment challenge (x402 PaymentRequired as structuredContent, MPP challenges in _meta["org.paymentauth/payment-required"]); retry with _meta["x402/payment"] or _meta["org.paymentauth/credential"].`;
  const returns =
    listing.type === 'write'
      ? `Returns an unsigned transaction {type: "calldata", to, data, value} to sign and send yourself; nothing is executed.`
      : `Returns {executionId, status, output: {result}} with result fields: ${fields}. If the run takes longer than the wait, status is "running": GET its resultUrl for the answer.`;
  return `${listing.description} Inputs: see the input schema. ${returns} ${price}`;
}
