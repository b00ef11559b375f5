import type { BlockReader } from './block-reader.ts';
import type { Occurrence } from './occurrence.ts';

/**
 * Block trigger: one run for every block whose number is a multiple of
 * blockInterval (blockInterval 1: every block; 100: blocks 100, 200, ...).
 * The rule depends on the number only, so it is the same after a restart.
 */
export async function blockOccurrences(reader: BlockReader, blockInterval: number, from: number, to: number): Promise<Occurrence[]> {
  const numbers: number[] = [];
  for (let n = Math.ceil(from / blockInterval) * blockInterval; n <= to; n += blockInterval) numbers.push(n);
  const blocks = await Promise.all(numbers.map((n) => reader.header(n)));
  return blocks.map((block, i) => ({
    key: `block:${numbers[i]}`,
    blockNumber: numbers[i],
    input: { blockNumber: numbers[i], blockHash: block.hash, blockTimestamp: Number(block.timestamp), parentHash: block.parentHash },
  }));
}
