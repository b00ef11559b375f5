import { describe, expect, it } from 'vitest';
import { Keypair, PublicKey } from '@solana/web3.js';
import { base58, generateSolanaKeypair } from '../src/wallets/solana-keypair.ts';

// The organization wallet's Solana key is made with node:crypto (no web3.js at start); web3.js must read it as its own.
describe('Solana keys without @solana/web3.js', () => {
  it('a generated key pair is a web3.js Keypair whose address is the stored one', () => {
    for (let i = 0; i < 50; i++) {
      const { address, secretKey } = generateSolanaKeypair();
      expect(secretKey).toHaveLength(64);
      // fromSecretKey checks that the public half belongs to the seed.
      expect(Keypair.fromSecretKey(secretKey).publicKey.toBase58()).toBe(address);
    }
  });

  it('base58 matches web3.js, leading zero bytes included', () => {
    const samples = [new Uint8Array(32), Uint8Array.from({ length: 32 }, (_, i) => (i < 3 ? 0 : i * 7)), Uint8Array.from({ length: 32 }, () => 255)];
    for (const bytes of samples) expect(base58(bytes)).toBe(new PublicKey(bytes).toBase58());
  });
});
