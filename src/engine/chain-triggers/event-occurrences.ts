import { getAddress, type AbiEvent, type Address, type PublicClient } from 'viem';
import { addressLink, transactionLink, type ChainCatalog } from '../../chains/catalog.ts';
import { jsonSafe } from '../../onchain/json-safe.ts';
import { inChainOrder, type Occurrence } from './occurrence.ts';

/** Event trigger: one run per log of the named event emitted by the contract. */
export async function eventOccurrences(
  client: PublicClient,
  chains: ChainCatalog,
  spec: { chainId: number; contractAddress: Address; events: AbiEvent[] },
  from: number,
  to: number,
): Promise<Occurrence[]> {
  const logs = await client.getLogs({ address: spec.contractAddress, events: spec.events, fromBlock: BigInt(from), toBlock: BigInt(to), strict: false });
  const links = (hash: string, address: string) => {
    const tx = transactionLink(chains, spec.chainId, hash);
    const at = addressLink(chains, spec.chainId, address);
    return { ...(tx ? { transactionLink: tx } : {}), ...(at ? { addressLink: at } : {}) };
  };
  return logs
    .filter((log) => log.transactionHash !== null && log.blockNumber !== null && log.logIndex !== null) // pending logs have none
    .map((log) => {
      const address = getAddress(log.address);
      return {
        key: `log:${log.transactionHash}:${log.logIndex}`,
        blockNumber: Number(log.blockNumber),
        position: log.logIndex!,
        input: {
          eventName: log.eventName,
          args: jsonSafe(log.args ?? {}),
          blockNumber: Number(log.blockNumber),
          transactionHash: log.transactionHash,
          address,
          logIndex: log.logIndex,
          ...links(log.transactionHash!, address),
        },
      };
    })
    .sort(inChainOrder);
}
