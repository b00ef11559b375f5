import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseEther, parseGwei, type Hex, type PublicClient } from 'viem';
import { waitForReceipt } from '../src/chains/receipt-watcher.ts';
import type { TestChain } from './helpers/anvil.ts';
import { startProxiedChain, type RpcProxy } from './helpers/rpc-proxy.ts';

/**
 * Many transactions waiting for their receipts on one chain cost the node one
 * block read per new block and one receipt read per mined transaction, not a
 * receipt read per waiting transaction per block (what a busy wallet's RPC
 * provider bills). The watcher reaches anvil through a proxy that counts the
 * calls it forwards.
 */

let chain: TestChain;
let proxy: RpcProxy;
let client: PublicClient;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => ({ chain, proxy, client, stop } = await startProxiedChain()));
afterAll(() => stop?.());

const count = (method: string) => proxy.count(method);

describe('waiting for many receipts', () => {
  test('12 waits mined one block at a time: each resolves with its own receipt, and each block costs one block read, not a read per waiting receipt', async () => {
    const WAITS = 12;
    await chain.testClient.setAutomine(false);
    // One transfer per block: blocks of 21,000 gas.
    await chain.testClient.request({ method: 'evm_setBlockGasLimit', params: ['0x5208'] } as never);
    try {
      const sender = chain.walletClient(1);
      const hashes: Hex[] = [];
      for (let i = 0; i < WAITS; i++) {
        // Full blocks raise the base fee 12.5% each: a fee cap well above it keeps all 12 includable.
        hashes.push(
          await sender.sendTransaction({
            account: chain.account(1),
            chain: chain.chain,
            to: chain.account(2).address,
            value: parseEther('0.001'),
            gas: 21_000n,
            maxFeePerGas: parseGwei('100'),
            maxPriorityFeePerGas: parseGwei('1'),
          }),
        );
      }
      const waits = hashes.map((hash) => waitForReceipt(client, hash, 20_000));
      // The first reads right after each wait began have found nothing (nothing is mined yet). Counted from when
      // they are over (no new read for 150 ms), not after a fixed pause: on a loaded machine they can come later.
      for (let last = -1, deadline = Date.now() + 10_000; count('eth_getTransactionReceipt') !== last && Date.now() < deadline;) {
        last = count('eth_getTransactionReceipt');
        await new Promise((r) => setTimeout(r, 150));
      }
      const receiptsBefore = count('eth_getTransactionReceipt');
      const blocksBefore = count('eth_getBlockByNumber');
      for (let i = 0; i < WAITS; i++) {
        await chain.testClient.mine({ blocks: 1 });
        await new Promise((r) => setTimeout(r, 30));
      }
      const receipts = await Promise.all(waits);
      expect(receipts.map((r) => r.transactionHash)).toEqual(hashes);
      for (const receipt of receipts) expect(receipt.status).toBe('success');
      expect(new Set(receipts.map((r) => r.blockNumber)).size).toBe(WAITS);

      const receiptReads = count('eth_getTransactionReceipt') - receiptsBefore;
      const blockReads = count('eth_getBlockByNumber') - blocksBefore;
      // Re-reading every waiting receipt on each new block would take 12 + 11 + … + 1 = 78 reads.
      expect(receiptReads).toBeGreaterThanOrEqual(WAITS);
      expect(receiptReads).toBeLessThanOrEqual(2 * WAITS);
      expect(blockReads).toBeLessThanOrEqual(WAITS + 2);
    } finally {
      await chain.testClient.request({ method: 'evm_setBlockGasLimit', params: ['0x1c9c380'] } as never);
      await chain.testClient.setAutomine(true);
    }
  });

  test('a wait on a chain whose block is not yet mined costs at most six receipt reads in its first moments, then only block reads until a block comes', async () => {
    await chain.testClient.setAutomine(false);
    try {
      const hash = await chain.walletClient(1).sendTransaction({ account: chain.account(1), chain: chain.chain, to: chain.account(2).address, value: 1n });
      const before = count('eth_getTransactionReceipt');
      const wait = waitForReceipt(client, hash, 20_000);
      // Four reads right after the broadcast (0, 1, 3 and 10 ms: a devnet's receipt is readable about a millisecond after it
      // answers), two on the poller's first block (its first sight of the chain), then block reads alone until a block
      // comes: a provider billing per call sees six receipt reads however long the block takes, not one per tick.
      await new Promise((r) => setTimeout(r, 400));
      const early = count('eth_getTransactionReceipt') - before;
      expect(early).toBeGreaterThanOrEqual(4);
      expect(early).toBeLessThanOrEqual(6);
      await new Promise((r) => setTimeout(r, 400));
      expect(count('eth_getTransactionReceipt') - before).toBe(early);
      await chain.testClient.mine({ blocks: 1 });
      expect(await wait).toMatchObject({ transactionHash: hash, status: 'success' });
    } finally {
      await chain.testClient.setAutomine(true);
    }
  });

  test('a lone wait on a node that mines on arrival resolves with its receipt', async () => {
    const hash = await chain.walletClient(1).sendTransaction({ account: chain.account(1), chain: chain.chain, to: chain.account(2).address, value: 1n });
    const receipt = await waitForReceipt(client, hash, 20_000);
    expect(receipt).toMatchObject({ transactionHash: hash, status: 'success' });
  });
});
