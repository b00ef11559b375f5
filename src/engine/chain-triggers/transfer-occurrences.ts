import { erc20Abi, getAddress, isAddressEqual, type AbiEvent, type Address, type PublicClient } from 'viem';
import type { BlockReader } from './block-reader.ts';
import { inChainOrder, type Occurrence } from './occurrence.ts';

/**
 * Transfer trigger. Native (no tokenAddress): top-level transactions with a
 * value, from or to the address; value moved by contract calls inside a
 * transaction (internal transfers) is not visible this way. ERC-20: the
 * token's Transfer logs from or to the address.
 */

const transferEvent = erc20Abi.find((item) => item.type === 'event' && item.name === 'Transfer') as AbiEvent;

export async function nativeTransferOccurrences(reader: BlockReader, address: Address, from: number, to: number): Promise<Occurrence[]> {
  const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const blocks = await Promise.all(numbers.map((n) => reader.withTransactions(n)));
  const found: (Occurrence & { position: number })[] = [];
  blocks.forEach((block, i) => {
    for (const tx of block.transactions) {
      const touches = isAddressEqual(tx.from, address) || (tx.to !== null && isAddressEqual(tx.to, address));
      if (!touches || tx.value === 0n) continue;
      found.push({
        key: `transfer:${tx.hash}:native`,
        blockNumber: numbers[i],
        position: tx.transactionIndex ?? 0,
        input: { from: getAddress(tx.from), to: tx.to ? getAddress(tx.to) : null, value: tx.value.toString(), token: 'native', transactionHash: tx.hash },
      });
    }
  });
  return found.sort(inChainOrder);
}

export async function tokenTransferOccurrences(client: PublicClient, token: Address, address: Address, from: number, to: number): Promise<Occurrence[]> {
  const range = { address: token, event: transferEvent, fromBlock: BigInt(from), toBlock: BigInt(to) };
  // Two filters (indexed from, indexed to); a transfer to oneself matches both and is kept once.
  const [sent, received] = await Promise.all([client.getLogs({ ...range, args: { from: address } }), client.getLogs({ ...range, args: { to: address } })]);
  const byKey = new Map<string, Occurrence & { position: number }>();
  for (const log of [...sent, ...received]) {
    if (log.transactionHash === null || log.blockNumber === null || log.logIndex === null) continue;
    const args = log.args as { from?: Address; to?: Address; value?: bigint };
    if (!args.from || !args.to || args.value === undefined) continue; // not a decodable ERC-20 Transfer
    const key = `transfer:${log.transactionHash}:${log.logIndex}`;
    byKey.set(key, {
      key,
      blockNumber: Number(log.blockNumber),
      position: log.logIndex,
      input: { from: getAddress(args.from), to: getAddress(args.to), value: args.value.toString(), token, transactionHash: log.transactionHash },
    });
  }
  return [...byKey.values()].sort(inChainOrder);
}
