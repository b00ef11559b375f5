import { expect, test } from 'vitest';
import { parseEther, parseGwei, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { addressOfKey, keyAccount } from '../src/wallets/evm-key.ts';

/**
 * Wallet addresses and signers are derived through OpenSSL (node:crypto)
 * instead of viem's JavaScript secp256k1: they must be exactly viem's, or a
 * stored address would not be the key's and every send would fail.
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

test('a stored address is used as given, not re-derived', () => {
  const stored = privateKeyToAddress(generatePrivateKey());
  expect(keyAccount(generatePrivateKey(), stored).address).toBe(stored);
});
