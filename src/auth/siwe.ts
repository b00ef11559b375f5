import { getAddress, isAddress, recoverMessageAddress, type Hex } from 'viem';
import { generateSiweNonce, parseSiweMessage } from 'viem/siwe';
import type { Store } from '../store/db.ts';
import type { ChainClients } from '../chains/clients.ts';
import { ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { isoIn, tokenHash } from './tokens.ts';

/**
 * Sign-In with Ethereum (EIP-4361, SPEC Authentication rule 7). Parsing is
 * viem's (`viem/siwe`); this module checks each field against what the
 * gateway issued and says which one failed. Nonces are single-use, stored as
 * their SHA-256 and expire after five minutes.
 */

export const SIWE_NONCE_TTL_MS = 5 * 60 * 1000;

const refuse = (message: string) => new ServiceError(401, 'siwe_invalid', message);

export async function issueSiweNonce(store: Store, input: { walletAddress: string; chainId: number }): Promise<string> {
  const nonce = generateSiweNonce();
  await store
    .insertInto('siwe_nonces')
    .values({
      nonce_hash: tokenHash(nonce),
      wallet_address: getAddress(input.walletAddress),
      chain_id: input.chainId,
      created_at: nowIso(),
      expires_at: isoIn(SIWE_NONCE_TTL_MS),
      used_at: null,
    })
    .execute();
  // Expired nonces are of no use to anyone: drop them as new ones are issued.
  await store.deleteFrom('siwe_nonces').where('expires_at', '<', isoIn(-SIWE_NONCE_TTL_MS)).execute();
  return nonce;
}

export interface SiweVerifyInput {
  message: string;
  signature: Hex;
  walletAddress: string;
  chainId: number;
}

/**
 * Checks a signed SIWE message issued for this gateway (`baseUrl` gives the
 * expected domain and URI) and consumes its nonce. Returns the signer.
 * Contract wallets are verified through the chain's client (EIP-1271, and
 * EIP-6492 for undeployed ones).
 */
export async function verifySiweSignIn(deps: { store: Store; chainClients: ChainClients; baseUrl: string }, input: SiweVerifyInput): Promise<`0x${string}`> {
  const fields = parseSiweMessage(input.message);
  if (!fields.address || !fields.domain || !fields.uri || !fields.nonce || fields.chainId === undefined || fields.version !== '1') {
    throw refuse(
      'The message is not an EIP-4361 sign-in message: it needs domain, address, URI, Version 1, Chain ID, Nonce and Issued At (build it with createSiweMessage from viem/siwe).',
    );
  }
  if (!isAddress(input.walletAddress, { strict: false })) throw refuse(`walletAddress ${JSON.stringify(input.walletAddress)} is not an address.`);
  const address = getAddress(fields.address);
  if (address !== getAddress(input.walletAddress)) {
    throw refuse(`The message is for ${address} but walletAddress is ${getAddress(input.walletAddress)}; sign with the wallet you request a session for.`);
  }
  const base = new URL(deps.baseUrl);
  if (fields.domain !== base.host) throw refuse(`Wrong domain in the message: expected ${base.host}, got ${fields.domain}.`);
  let uriOrigin: string | undefined;
  try {
    uriOrigin = new URL(fields.uri).origin;
  } catch {
    uriOrigin = undefined;
  }
  if (uriOrigin !== base.origin) throw refuse(`Wrong URI in the message: expected ${base.origin} (or a path under it), got ${fields.uri}.`);
  if (fields.chainId !== input.chainId) throw refuse(`Chain mismatch: the message says Chain ID ${fields.chainId}, the request chainId ${input.chainId}.`);
  const now = Date.now();
  if (fields.expirationTime && fields.expirationTime.getTime() <= now)
    throw refuse('The message has expired (Expiration Time is in the past); sign a new one.');
  if (fields.notBefore && fields.notBefore.getTime() > now) throw refuse('The message is not valid yet (Not Before is in the future).');

  // Consume the nonce first and unconditionally: a nonce is good for one attempt, right or wrong.
  const consumed = await deps.store
    .updateTable('siwe_nonces')
    .set({ used_at: nowIso() })
    .where('nonce_hash', '=', tokenHash(fields.nonce))
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIso())
    .returning(['wallet_address', 'chain_id'])
    .executeTakeFirst();
  if (!consumed)
    throw refuse('Unknown, expired or already used nonce; request a new one from POST /api/auth/siwe/nonce (nonces last 5 minutes and work once).');
  if (consumed.wallet_address !== address || consumed.chain_id !== input.chainId) {
    throw refuse('This nonce was issued for another wallet or chain; request a nonce for this walletAddress and chainId.');
  }

  if (!(await signedBy(deps.chainClients, input, address))) {
    throw refuse(`The signature is not from ${address} (or the contract wallet did not accept it under EIP-1271).`);
  }
  return address;
}

async function signedBy(chainClients: ChainClients, input: SiweVerifyInput, address: `0x${string}`): Promise<boolean> {
  try {
    if ((await recoverMessageAddress({ message: input.message, signature: input.signature })) === address) return true;
  } catch {
    // Not a 65-byte ECDSA signature: a contract wallet's, checked below.
  }
  let client;
  try {
    client = chainClients.publicClient(input.chainId);
  } catch {
    return false; // A chain this gateway cannot reach: only plain wallet signatures can be checked.
  }
  try {
    return await client.verifyMessage({ address, message: input.message, signature: input.signature });
  } catch {
    return false;
  }
}
