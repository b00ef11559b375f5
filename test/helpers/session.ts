import makeFetchCookie from 'fetch-cookie';
import { CookieJar } from 'tough-cookie';
import { createSiweMessage } from 'viem/siwe';
import type { LocalAccount } from 'viem';

/**
 * A browser-like client: a real cookie jar (tough-cookie) behind fetch, and
 * the gateway's own origin on every request, as a page served by the gateway
 * would send it.
 */
export interface BrowserClient {
  jar: CookieJar;
  fetch(path: string, init?: RequestInit & { json?: unknown }): Promise<{ status: number; headers: Headers; body: any }>;
}

export function browserClient(baseUrl: string, options: { origin?: string | null } = {}): BrowserClient {
  const jar = new CookieJar();
  const cookieFetch = makeFetchCookie(fetch, jar);
  return {
    jar,
    async fetch(path, init = {}) {
      const headers = new Headers(init.headers);
      const origin = options.origin === undefined ? new URL(baseUrl).origin : options.origin;
      if (origin !== null && !headers.has('origin')) headers.set('origin', origin);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      const response = await cookieFetch(new URL(path, baseUrl).toString(), { ...init, headers, body });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = text;
      }
      return { status: response.status, headers: response.headers, body: parsed as any };
    },
  };
}

/** The EIP-4361 message a wallet signs for this gateway (overrides build the bad ones). */
export function siweMessage(
  baseUrl: string,
  account: { address: `0x${string}` },
  nonce: string,
  overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {},
) {
  const url = new URL(baseUrl);
  return createSiweMessage({
    domain: url.host,
    address: account.address,
    statement: 'Sign in to Flowgate',
    uri: url.origin,
    version: '1',
    chainId: 1,
    nonce,
    issuedAt: new Date(),
    ...overrides,
  });
}

/** Signs in with a viem local account; the client's jar then holds the session cookie. */
export async function signIn(client: BrowserClient, baseUrl: string, account: LocalAccount, chainId = 1) {
  const nonce = await client.fetch('/api/auth/siwe/nonce', { method: 'POST', json: { walletAddress: account.address, chainId } });
  if (nonce.status !== 200) throw new Error(`nonce: ${nonce.status} ${JSON.stringify(nonce.body)}`);
  const message = siweMessage(baseUrl, account, nonce.body.nonce, { chainId });
  const signature = await account.signMessage({ message });
  const verified = await client.fetch('/api/auth/siwe/verify', { method: 'POST', json: { message, signature, walletAddress: account.address, chainId } });
  if (verified.status !== 200) throw new Error(`verify: ${verified.status} ${JSON.stringify(verified.body)}`);
  return verified.body as {
    user: { id: string; walletAddress: string };
    organization: { id: string; slug: string; role: string };
    session: { id: string };
    created: boolean;
  };
}
