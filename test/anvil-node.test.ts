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
});
