import { badRequest } from '../errors.ts';
import { deliver, joinUrl } from './delivery.ts';
import type { SendOptions } from './send-options.ts';

/**
 * Identity checks of the two non-notification services an integration can
 * name, for the integration tester: each calls an authenticated read that
 * changes nothing.
 */

/** Safe's API gateway serves each chain's transaction service under its short name. */
export const SAFE_API_BASE_URL = 'https://api.safe.global';
const SAFE_CHAINS: Readonly<Record<number, string>> = {
  1: 'eth',
  10: 'oeth',
  56: 'bnb',
  100: 'gno',
  137: 'pol',
  324: 'zksync',
  8453: 'base',
  42161: 'arb1',
  43114: 'avax',
  59144: 'linea',
  84532: 'basesep',
  11155111: 'sep',
};

/** `GET /tx-service/<chain>/api/v1/about/` with the Bearer key: the service's name and version. */
export async function checkSafe(config: { apiKey: string; chainId?: number; apiBaseUrl?: string }, options: SendOptions): Promise<string> {
  const chainId = config.chainId ?? 1;
  const short = SAFE_CHAINS[chainId];
  if (!short) {
    throw badRequest(
      'invalid_config',
      `The Safe transaction service has no endpoint known here for chain ${chainId}; supported: ${Object.keys(SAFE_CHAINS).join(', ')}.`,
      {
        field: 'chainId',
      },
    );
  }
  const res = await deliver(
    {
      method: 'GET',
      url: joinUrl(config.apiBaseUrl ?? SAFE_API_BASE_URL, `/tx-service/${short}/api/v1/about/`),
      headers: { authorization: `Bearer ${config.apiKey}` },
    },
    { ...options, provider: 'Safe transaction service', secrets: [config.apiKey], maxAttempts: 1 },
  );
  const b = res.body as { name?: unknown; version?: unknown } | undefined;
  return `Safe transaction service for chain ${chainId} answered (${String(b?.name ?? 'unnamed')} ${String(b?.version ?? '')}).`.replace(' )', ')');
}

/** Vercel's AI Gateway; `baseUrl` is the integration's own field, as the provider SDKs name it. */
export const AI_GATEWAY_BASE_URL = 'https://ai-gateway.vercel.sh/v1';

/** `GET <baseUrl>/credits` with the Bearer key: the account's balance, which needs a valid key. */
export async function checkAiGateway(config: { apiKey: string; baseUrl?: string }, options: SendOptions): Promise<string> {
  const res = await deliver(
    { method: 'GET', url: joinUrl(config.baseUrl ?? AI_GATEWAY_BASE_URL, '/credits'), headers: { authorization: `Bearer ${config.apiKey}` } },
    { ...options, provider: 'AI gateway', secrets: [config.apiKey], maxAttempts: 1 },
  );
  const balance = (res.body as { balance?: unknown } | undefined)?.balance;
  return `AI gateway accepted the API key${balance !== undefined ? ` (balance ${String(balance)})` : ''}.`;
}
