import { expect, test } from 'vitest';
import { parseEther, parseGwei, type Hex } from 'viem';
import { keccak256, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress, sign } from 'viem/accounts';
import { addressOfKey, keyAccount, signHash } from '../src/wallets/evm-key.ts';

/**
 * Wallet addresses and signers are derived through OpenSSL (node:crypto)
 * instead of viem's JavaScript secp256k1: they must be exactly viem's, or a
 * stored address would not be the key's and every send would fail. Signatures
 * are libsecp256k1's (WebAssembly): the same RFC 6979 nonce and low s as
 * viem's noble, so the same bytes, or a node would see another signer.
 */

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const edgeKeys: Hex[] = [`0x${'0'.repeat(63)}1`, `0x${(N - 1n).toString(16).padStart(64, '0')}`, `0x00${'f'.repeat(62)}`];

test('addressOfKey is viem privateKeyToAddress for random keys and the curve edges', () => {
  for (const key of [...edgeKeys, ...Array.from({ length: 200 }, () => generatePrivateKey())]) {
    expect(addressOfKey(key), key).toBe(privateKeyToAddress(key));
  }
});

test('keyAccount signs transactions, messages and typed data exactly as privateKeyToAccount', async () => {
  const key = generatePrivateKey();
  const ours = keyAccount(key);
  const viem = privateKeyToAccount(key);
  expect(ours.address).toBe(viem.address);
  const transaction = {
    type: 'eip1559',
    chainId: 31337,
    nonce: 7,
    gas: 21_000n,
    maxFeePerGas: parseGwei('3'),
    maxPriorityFeePerGas: 1n,
    to: '0x000000000000000000000000000000000000bEEF',
    value: parseEther('0.01'),
  } as const;
  expect(await ours.signTransaction(transaction)).toBe(await viem.signTransaction(transaction));
  const withData = { ...transaction, nonce: 8, data: '0xe3ee160e00' } as const;
  expect(await ours.signTransaction(withData)).toBe(await viem.signTransaction(withData));
  const legacy = { type: 'legacy', chainId: 1, nonce: 0, gas: 21_000n, gasPrice: parseGwei('1'), to: transaction.to, value: 1n } as const;
  expect(await ours.signTransaction(legacy)).toBe(await viem.signTransaction(legacy));
  expect(await ours.sign!({ hash: keccak256('0x1234') })).toBe(await viem.sign!({ hash: keccak256('0x1234') }));
  expect(await ours.signMessage({ message: 'sign in to flowgate' })).toBe(await viem.signMessage({ message: 'sign in to flowgate' }));
  const typedData = {
    domain: { name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: '0xE265742E68d44961E86382D2265d9f2B191F629a' },
    types: {
      Transfer: [
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
      ],
    },
    primaryType: 'Transfer',
    message: { to: '0x000000000000000000000000000000000000bEEF', value: 10_000n },
  } as const;
  expect(await ours.signTypedData(typedData)).toBe(await viem.signTypedData(typedData));
});

test('signHash is viem sign, byte for byte, for random keys and hashes and the curve edges', async () => {
  const keys = [...edgeKeys, ...Array.from({ length: 200 }, () => generatePrivateKey())];
  for (const [i, key] of keys.entries()) {
    const hash = keccak256(toHex(`message ${i}`));
    expect(await signHash(hash, key), key).toEqual(await sign({ hash, privateKey: key }));
  }
  await expect(signHash(keccak256('0x01'), `0x${'0'.repeat(64)}`)).rejects.toThrow();
});

test('a stored address is used as given, not re-derived', () => {
  const stored = privateKeyToAddress(generatePrivateKey());
  expect(keyAccount(generatePrivateKey(), stored).address).toBe(stored);
});
