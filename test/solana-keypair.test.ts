import { spawnSync } from 'node:child_process';
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

  it('30,000 key pairs in a row with a small young generation: the process finishes (the JWK export deadlocked within about 5,000)', () => {
    const script = [
      "import { generateSolanaKeypair } from './src/wallets/solana-keypair.ts';",
      'let last = "";',
      'for (let i = 0; i < 30000; i++) last = generateSolanaKeypair().address;',
      'console.log("done", last.length > 30);',
    ].join('\n');
    // A small semi-space makes V8 collect the young generation often, as a busy gateway does.
    const run = spawnSync(process.execPath, ['--max-semi-space-size=1', '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 25_000,
    });
    expect(run.signal).toBeNull(); // SIGTERM from the timeout: deadlocked
    expect(run.stdout.trim()).toBe('done true');
  }, 30_000);
});
