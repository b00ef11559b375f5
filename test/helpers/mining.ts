import type { TestChain } from './anvil.ts';

/**
 * Holding transactions in a test chain's pool: a gateway's settlement or transfer sent while mining is held stays
 * unmined until the test mines it, drops it, or has another transaction take its nonce.
 */

/** One raw JSON-RPC call to the chain's node (anvil's own methods included); throws the node's error. */
export async function chainRpc(chain: TestChain, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(chain.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** Holds what is sent in the pool; the gateway reads automine at most once a second, so it is given that long to see it. */
export async function holdMining(chain: TestChain): Promise<void> {
  await chainRpc(chain, 'evm_setAutomine', [false]);
  await new Promise((resolve) => setTimeout(resolve, 1_200));
}

/** Mines what the pool holds, and mines on arrival again. */
export async function resumeMining(chain: TestChain): Promise<void> {
  await chainRpc(chain, 'evm_mine');
  await chainRpc(chain, 'evm_setAutomine', [true]);
}

export const pendingInPool = async (chain: TestChain) => Number(((await chainRpc(chain, 'txpool_status')) as { pending: string }).pending);
