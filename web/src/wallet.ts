import { createSiweMessage } from 'viem/siwe';
import { stringToHex } from 'viem';
import { api, ApiError } from './api.ts';

/**
 * The browser wallet (EIP-1193 `window.ethereum`): wallet sign-in (SIWE, SPEC
 * Authentication rule 7) and the step-up signature (rule 8), both personal_sign.
 */

interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

const provider = (): Eip1193 => {
  const ethereum = (window as { ethereum?: Eip1193 }).ethereum;
  if (!ethereum)
    throw new Error('No browser wallet found. Install one (it provides window.ethereum), or run `flowgate open` on the server for a one-time sign-in link.');
  return ethereum;
};

export const hasWallet = () => Boolean((window as { ethereum?: unknown }).ethereum);

async function account(): Promise<`0x${string}`> {
  const accounts = (await provider().request({ method: 'eth_requestAccounts' })) as string[];
  if (!accounts?.[0]) throw new Error('The wallet shared no account.');
  return accounts[0] as `0x${string}`;
}

const personalSign = async (address: string, message: string) =>
  (await provider().request({ method: 'personal_sign', params: [stringToHex(message), address] })) as string;

export async function signInWithWallet(): Promise<void> {
  const address = await account();
  const chainHex = await provider()
    .request({ method: 'eth_chainId' })
    .catch(() => '0x1');
  const chainId = Number.parseInt(String(chainHex), 16) || 1;
  const { nonce } = await api<{ nonce: string }>('/api/auth/siwe/nonce', { method: 'POST', body: { walletAddress: address, chainId } });
  const message = createSiweMessage({
    domain: location.host,
    address,
    statement: 'Sign in to Flowgate',
    uri: location.origin,
    version: '1',
    chainId,
    nonce,
    issuedAt: new Date(),
  });
  const signature = await personalSign(address, message);
  await api('/api/auth/siwe/verify', { method: 'POST', body: { message, signature, walletAddress: address, chainId } });
}

/**
 * Runs a step-up-guarded call: when the gateway answers 401 signature_required,
 * the wallet signs the challenge verbatim and the call is repeated once with
 * `signature` (plus an authenticator `code` the user typed, when required).
 */
export async function withStepUp<T>(call: (proof: { signature?: string; code?: string }) => Promise<T>, extra: { code?: string } = {}): Promise<T> {
  const initial = extra.code ? { code: extra.code } : {};
  try {
    return await call(initial);
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'signature_required' || typeof error.body.challenge !== 'string') throw error;
    const address = await account();
    const signature = await personalSign(address, error.body.challenge);
    return call({ ...initial, signature });
  }
}
