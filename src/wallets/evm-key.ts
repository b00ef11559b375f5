import { createECDH } from 'node:crypto';
import {
  getAddress,
  hashMessage,
  hashTypedData,
  keccak256,
  serializeTransaction,
  type Address,
  type Hex,
  type Signature,
  type TransactionSerializable,
} from 'viem';
import { signAuthorization, toAccount, type LocalAccount } from 'viem/accounts';

/**
 * An EVM key's address and signer without deriving the public key in JavaScript.
 * viem's privateKeyToAccount and privateKeyToAddress compute it with
 * @noble/curves, whose first use builds secp256k1 tables (about 40 ms of CPU
 * at start) and each later use costs about 1 ms; OpenSSL (node:crypto) derives
 * it in microseconds. Signatures are libsecp256k1's, compiled to WebAssembly
 * (tiny-secp256k1): RFC 6979 nonces and low s as noble's, so the same bytes,
 * in a third of the CPU (0.10 against 0.27 ms here) and without the 195 KB of
 * BigInt garbage noble leaves per signature (a paid call's settlement signs
 * one). test/evm-key.test.ts checks both against viem's own.
 */

/** The checksummed address of `privateKey` (0x + 64 hex digits). */
export function addressOfKey(privateKey: Hex): Address {
  const ecdh = createECDH('secp256k1');
  ecdh.setPrivateKey(Buffer.from(privateKey.slice(2), 'hex'));
  // Uncompressed: 0x04 ‖ x ‖ y; the address is the last 20 bytes of keccak256(x ‖ y).
  return getAddress(`0x${keccak256(ecdh.getPublicKey().subarray(1)).slice(-40)}`);
}

/** Loaded at the first signature: its 1.2 MB module compiles in about 50 ms, not paid at start. */
let wasm: Promise<typeof import('tiny-secp256k1')> | undefined;
const secp256k1Wasm = () => (wasm ??= import('tiny-secp256k1'));

/** viem's sign({ hash, privateKey }), by libsecp256k1. */
export async function signHash(hash: Hex, privateKey: Hex): Promise<Signature> {
  const { signRecoverable } = await secp256k1Wasm();
  const { signature, recoveryId } = signRecoverable(Buffer.from(hash.slice(2), 'hex'), Buffer.from(privateKey.slice(2), 'hex'));
  const hex = Buffer.from(signature).toString('hex');
  return { r: `0x${hex.slice(0, 64)}`, s: `0x${hex.slice(64)}`, v: recoveryId ? 28n : 27n, yParity: recoveryId };
}

/** A signature as viem's `to: 'hex'`: r ‖ s ‖ v (27 or 28). */
const signatureHex = ({ r, s, yParity }: Signature): Hex => `0x${r.slice(2)}${s.slice(2)}${yParity ? '1c' : '1b'}`;

/** privateKeyToAccount's signer for a key whose address is already known (stored with it, or from addressOfKey). */
export function keyAccount(privateKey: Hex, address: Address = addressOfKey(privateKey)): LocalAccount {
  return toAccount({
    address,
    sign: async ({ hash }) => signatureHex(await signHash(hash, privateKey)),
    signAuthorization: async (authorization) => signAuthorization({ ...authorization, privateKey }),
    signMessage: async ({ message }) => signatureHex(await signHash(hashMessage(message), privateKey)),
    // As viem's signTransaction: an EIP-4844 transaction is signed without its sidecars.
    signTransaction: async (transaction, { serializer = serializeTransaction } = {}) => {
      const signable = transaction.type === 'eip4844' ? { ...transaction, sidecars: false } : transaction;
      const signature = await signHash(keccak256(await serializer(signable as TransactionSerializable)), privateKey);
      return serializer(transaction, signature) as never;
    },
    signTypedData: async (typedData) => signatureHex(await signHash(hashTypedData(typedData as Parameters<typeof hashTypedData>[0]), privateKey)),
  });
}
