import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { startAnvil } from '../src/chains/anvil.ts';

/**
 * anvil writes the states of blocks older than the last few hundred under ~/.foundry/anvil/tmp and does not remove
 * them when it stops: every devnet start, test chain and bench left one such directory, as large as its chain's
 * history. The gateway's anvil keeps no state history on disk.
 */

/** EIP-2935's block-hash history contract. */
const HISTORY_CONTRACT = '0x0000F90827F1C53a10cb7A02335B175320002935';

const stateCache = path.join(os.homedir(), '.foundry', 'anvil', 'tmp');
const cached = () => new Set(fs.existsSync(stateCache) ? fs.readdirSync(stateCache) : []);

async function rpc(url: string, method: string, params: unknown[] = []): Promise<{ result?: unknown; error?: { message: string } }> {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await answer.json()) as { result?: unknown; error?: { message: string } };
}

describe('the anvil the gateway starts', () => {
  test('leaves no state history on disk: 600 blocks, a stop, and nothing new in anvil’s state cache', async () => {
    const before = cached();
    const node = await startAnvil({ chainId: 31337 });
    try {
      expect((await rpc(node.url, 'anvil_mine', ['0x258'])).error).toBeUndefined();
      expect(await rpc(node.url, 'eth_blockNumber')).toMatchObject({ result: '0x258' });
      // The latest state answers; a state 600 blocks back is not kept anywhere.
      expect((await rpc(node.url, 'eth_getBalance', ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'latest'])).result).toBe('0x21e19e0c9bab2400000');
      expect((await rpc(node.url, 'eth_getBalance', ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x1'])).error?.message).toMatch(/BlockOutOfRange/);
    } finally {
      await node.stop();
    }
    expect([...cached()].filter((entry) => !before.has(entry))).toEqual([]);
  });

  /**
   * Under Prague (anvil's own default) each block writes its parent's hash into the EIP-2935 history contract, and anvil
   * hashes the whole state again per block: a block cost more with every block mined until the ring of 8,191 slots was
   * full (an empty block 0.15 ms of anvil's CPU under Cancun, 6.3 ms under Prague from block 8,000 on). The gateway's
   * anvil mines by Cancun: its blocks write no such history. The Prague node beside it shows what the check sees.
   */
  test.each([
    ['the gateway’s (Cancun)', false, undefined],
    ['anvil’s own default (Prague)', true, 'prague'],
  ])('%s: after 300 blocks, the block-hash history contract holds block 299: %s', async (_label, writesHistory, hardfork) => {
    const node = await startAnvil({ chainId: 31337, ...(hardfork ? { hardfork } : {}) });
    try {
      expect((await rpc(node.url, 'anvil_mine', ['0x12c'])).error).toBeUndefined();
      const slot = `0x${(299).toString(16)}`; // block 300 stores block 299's hash at 299 % 8191
      const stored = (await rpc(node.url, 'eth_getStorageAt', [HISTORY_CONTRACT, slot, 'latest'])).result;
      const block = (await rpc(node.url, 'eth_getBlockByNumber', ['latest', false])).result as Record<string, unknown>;
      const parent = (await rpc(node.url, 'eth_getBlockByNumber', ['0x12b', false])).result as { hash: string };
      if (writesHistory) {
        expect(stored).toBe(parent.hash);
        expect(block).toHaveProperty('requestsHash');
      } else {
        expect(BigInt(stored as string)).toBe(0n);
        expect(block).not.toHaveProperty('requestsHash'); // a Prague header field
        expect(block).toHaveProperty('parentBeaconBlockRoot'); // a Cancun one: not an older fork either
      }
    } finally {
      await node.stop();
    }
  });
});
