import type { Address, Hex, PublicClient } from 'viem';

/**
 * anvil's pool can file a transaction as waiting on the nonce before it while that one is being mined, and then
 * never promote it (foundry-rs/foundry#10122 describes the class): its nonce is its sender's mined count, yet it
 * sits in the pool's queued set for good. Sending the same bytes again is refused as already imported, mining does
 * not move it, and every later send of that sender queues behind it, so their receipts time out (most likely what lost a
 * direct transfer in a CI run; the facilitator met it as a three-minute settlement stall).
 *
 * On anvil, that state is healed for the senders of the transactions a receipt wait has waited on a while
 * (src/chains/receipt-watcher.ts): the sender's pooled transactions are taken out (anvil_removePoolTransactions)
 * and the same bytes are sent again in nonce order. Nothing is signed again, so every hash a record holds stays
 * true. A sender whose queued transactions wait behind a nonce nobody sent (a real gap) is left alone: that gap is
 * filled by its sender (src/chains/shared-nonces.ts). A transaction of the sender arriving between the pool read
 * and the removal would go with them: the pool is read again right before the removal, and a sender whose
 * transactions changed meanwhile is left to the next look.
 */

/** What txpool_content holds per sender and nonce (a decimal string). */
type Pool = Record<string, Record<string, { hash: Hex }>>;

type Content = { pending?: Pool; queued?: Pool };

const RAW_READS_AT_ONCE = 32;

const poolOf = (client: PublicClient) => client.request({ method: 'txpool_content' } as never, { retryCount: 0 }) as Promise<Content>;

/** Whether `sender` has the same transactions in both reads of the pool. */
const samePool = (now: Content, sender: string, before: Content) => {
  const hashes = (content: Content) =>
    [content.pending?.[sender], content.queued?.[sender]]
      .flatMap((txs) => Object.values(txs ?? {}).map((tx) => tx.hash.toLowerCase()))
      .sort()
      .join();
  return hashes(now) === hashes(before);
};

/** Heals the senders of `waited` (hashes still unmined) that the node holds in that state; each heal is logged. */
export async function healStuckSenders(client: PublicClient, waited: readonly Hex[]): Promise<void> {
  const content = await poolOf(client);
  const wanted = new Set(waited.map((hash) => hash.toLowerCase()));
  for (const [sender, queued] of Object.entries(content.queued ?? {})) {
    if (!Object.values(queued).some((tx) => wanted.has(tx.hash.toLowerCase()))) continue;
    const from = sender as Address;
    const mined = await client.getTransactionCount({ address: from, blockTag: 'latest' });
    // First in line yet queued: the race. Anything else is a gap, or was promoted since the read.
    if (!queued[String(mined)]) continue;
    const pooled = Object.entries({ ...content.pending?.[sender], ...queued })
      .map(([nonce, tx]) => ({ nonce: Number(nonce), hash: tx.hash }))
      .filter((tx) => tx.nonce >= mined)
      .sort((a, b) => a.nonce - b.nonce);
    const raws: (Hex | null)[] = [];
    // A few dozen reads at a time: a flooded sender can have thousands pooled, each read its own request.
    for (let i = 0; i < pooled.length; i += RAW_READS_AT_ONCE) {
      const slice = pooled.slice(i, i + RAW_READS_AT_ONCE);
      raws.push(
        ...(await Promise.all(
          slice.map((tx) => client.request({ method: 'eth_getRawTransactionByHash', params: [tx.hash] } as never, { retryCount: 0 }) as Promise<Hex | null>),
        )),
      );
    }
    // One the node no longer knows (dropped since the read): the next look decides.
    if (raws.some((raw) => !raw)) continue;
    // Read again just before the removal: a transaction of the sender that arrived since would be taken out with
    // the rest and not sent again, so any change leaves the sender to the next look.
    if (!samePool(await poolOf(client), sender, content)) continue;
    await client.request({ method: 'anvil_removePoolTransactions', params: [from] } as never, { retryCount: 0 });
    for (const raw of raws) {
      // Refused ("already imported", "nonce too low"): another heal or the node took it back already.
      await client.request({ method: 'eth_sendRawTransaction', params: [raw] } as never, { retryCount: 0 }).catch(() => {});
    }
    console.error(
      `[flowgate] chain ${client.chain?.id}: the node held nonce ${mined} of ${from} unmined although it was next (anvil's pool race); its ${raws.length} pooled transaction(s) were taken out and the same bytes sent again`,
    );
  }
}
