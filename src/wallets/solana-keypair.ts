import { generateKeyPairSync } from 'node:crypto';

/**
 * Solana key generation with node:crypto, so the organization wallet needs no
 * @solana/web3.js at run time (it cost ~1.5 s and ~35 MB at first start;
 * README "Start and memory"). test/solana-keypair.test.ts checks both against
 * web3.js.
 */

/** Bitcoin's base58 alphabet, which Solana addresses use. */
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function base58(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  let text = '';
  while (value > 0n) {
    text = ALPHABET[Number(value % 58n)]! + text;
    value /= 58n;
  }
  // Each leading zero byte is a leading '1'.
  for (let i = 0; i < bytes.length && bytes[i] === 0; i++) text = `1${text}`;
  return text;
}

/**
 * An ed25519 key pair in web3.js's Keypair layout: secretKey = 32-byte seed ‖ 32-byte public key; the address is the
 * public key in base58.
 *
 * The keys come back already encoded (DER: SPKI ends with the 32-byte public key, PKCS#8 with the 32-byte seed), never
 * as KeyObjects exported afterwards: Node 20 exports an ed25519 KeyObject as JWK holding the key's mutex while it
 * allocates, and a garbage collection in that allocation can finalize the generation job that shares that mutex: the
 * process deadlocked for good (a CI run's gateway hung there; a loop of new key pairs froze within about 5,000 when the
 * young generation was small; test/solana-keypair.test.ts).
 */
export function generateSolanaKeypair(): { address: string; secretKey: Buffer } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519', {
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
  });
  const pub = publicKey.subarray(-32);
  const seed = privateKey.subarray(-32);
  return { address: base58(pub), secretKey: Buffer.concat([seed, pub]) };
}
