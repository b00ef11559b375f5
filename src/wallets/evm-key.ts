import { createECDH } from 'node:crypto';
import { getAddress, keccak256, type Address, type Hex } from 'viem';
import { sign, signAuthorization, signMessage, signTransaction, signTypedData, toAccount, type LocalAccount } from 'viem/accounts';

/**
 * An EVM key's address and signer without deriving the public key in JavaScript.
 * viem's privateKeyToAccount and privateKeyToAddress compute it with
 * @noble/curves, whose first use builds secp256k1 tables (about 40 ms of CPU
 * at start) and each later use costs about 1 ms; OpenSSL (node:crypto) derives
 * it in microseconds. Signing still goes through viem (RFC 6979, as before):
 * test/evm-key.test.ts checks both against viem's own.
 */

/** The checksummed address of `privateKey` (0x + 64 hex digits). */
export function addressOfKey(privateKey: Hex): Address {
  const ecdh = createECDH('secp256k1');
  ecdh.setPrivateKey(Buffer.from(privateKey.slice(2), 'hex'));
  // Uncompressed: 0x04 ‖ x ‖ y; the address is the last 20 bytes of keccak256(x ‖ y).
  return getAddress(`0x${keccak256(ecdh.getPublicKey().subarray(1)).slice(-40)}`);
}

/** privateKeyToAccount's signer for a key whose address is already known (stored with it, or from addressOfKey). */
export function keyAccount(privateKey: Hex, address: Address = addressOfKey(privateKey)): LocalAccount {
  return toAccount({
    address,
    sign: async ({ hash }) => sign({ hash, privateKey, to: 'hex' }),
    signAuthorization: async (authorization) => signAuthorization({ ...authorization, privateKey }),
    signMessage: async ({ message }) => signMessage({ message, privateKey }),
    signTransaction: async (transaction, { serializer } = {}) => signTransaction({ privateKey, transaction, serializer }),
    signTypedData: async (typedData) => signTypedData({ ...typedData, privateKey } as Parameters<typeof signTypedData>[0]),
  });
}
