import { MCP_MPP_REQUIRED } from '../payments/paid-call.ts';
import { JsonRpcToolError, type McpToolSet } from './sdk.ts';
import { serviceErrorOf } from './toolset.ts';

/**
 * The MPP error form over MCP: a payment challenge as JSON-RPC error -32042
 * (-32043 when a presented payment was refused) with `data.challenges`,
 * instead of an `isError` result carrying them in `_meta`.
 *
 * Only for callers that announce MPP. The server is stateless, so it never
 * sees the `initialize` capabilities of a later tools/call; the signal it does
 * see on every POST is the `Accept-Payment` header that mppx's fetch client
 * (`Mppx.create(...).fetch`, used as the MCP transport's fetch) sends, and
 * that client reads -32042 errors out of MCP responses and retries with
 * `_meta["org.paymentauth/credential"]`. Everyone else (plain MCP clients,
 * x402 clients, mppx's McpClient wrapper) keeps the result form, which they
 * all understand.
 */

export const MPP_PAYMENT_REQUIRED_CODE = -32042;
export const MPP_PAYMENT_REFUSED_CODE = -32043;

/** True when an `Accept-Payment` header accepts the `evm` charge this gateway offers (q > 0). */
export function acceptsMppCharge(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [range = '', ...params] = part.trim().split(';');
    const [method, intent] = range.trim().toLowerCase().split('/');
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    return (method === 'evm' || method === '*') && (intent === 'charge' || intent === '*') && weight > 0;
  });
}

/** Turns payment-challenge results of a tool set into -32042 / -32043 JSON-RPC errors; every other result passes through. */
export function withMppErrorForm(tools: McpToolSet): McpToolSet {
  return {
    list: () => tools.list(),
    async call(name, args, meta, progress) {
      const result = await tools.call(name, args, meta, progress);
      const required = result.isError ? (result._meta?.[MCP_MPP_REQUIRED] as { challenges?: unknown[] } | undefined) : undefined;
      if (!required?.challenges?.length) return result;
      const body = (result.structuredContent ?? {}) as Record<string, unknown>;
      const refused = typeof body.reason === 'string';
      const message = serviceErrorOf(result)?.message ?? 'Payment Required';
      // data keeps everything the result form carried: the MPP challenges plus the x402 PaymentRequired and offers.
      throw new JsonRpcToolError(refused ? MPP_PAYMENT_REFUSED_CODE : MPP_PAYMENT_REQUIRED_CODE, message, {
        httpStatus: 402,
        challenges: required.challenges,
        ...body,
      });
    },
  };
}
