import { decodeBody, encodeBody, fetchForNode, isOk, parseHeaders, parseMethod, parseTimeout, requireUrl, statusError } from './http-request.ts';
import type { NodeRunner } from './types.ts';

/**
 * `webhook/send-webhook`: sends a JSON payload to a URL under the same egress
 * policy as HTTP Request. The payload is sent like HTTP Request's body (a
 * string as-is, an object as JSON). Output `{success, status, data}` (data:
 * the parsed response); a non-2xx answer is `success: false` with `error`.
 */

export const WEBHOOK_METHODS = ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'] as const;

export const sendWebhookRunner: NodeRunner = async (config, ctx) => {
  const url = requireUrl(config.webhookUrl, 'webhookUrl');
  const method = parseMethod(config.webhookMethod, 'webhookMethod', WEBHOOK_METHODS, 'POST');
  const headers = parseHeaders(config.webhookHeaders, 'webhookHeaders');
  const body = method === 'GET' ? undefined : encodeBody(config.webhookPayload, headers);
  const res = await fetchForNode(ctx, url, { method, headers, body, timeoutMs: parseTimeout(config.timeout) });
  const data = decodeBody(res.body, res.headers['content-type']);
  if (isOk(res.status)) return { success: true, status: res.status, data };
  return { success: false, error: statusError(res), status: res.status, data };
};
