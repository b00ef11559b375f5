import { getAddress, parseAbiItem, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import { eip3009ABI } from '@x402/evm';
import { Receipt } from 'mppx';
import { Types } from 'mppx/evm';
import type { PaymentsTable } from '../store/schema.ts';
import { paysExactly } from './local-facilitator.ts';
import type { PaymentReceipt } from './paid-call.ts';

/**
 * What the chain says about a payment whose settlement outcome was not known
 * (the call stopped waiting for its transaction, or the process stopped
 * mid-settlement). The EIP-3009 authorization is the fact: it can be used
 * once, by whichever transaction carries it (ours, a fee-bumped replacement,
 * anyone who saw the signature), and never after its validBefore.
 *  - used, by a transaction that paid the payee exactly the amount: settled;
 *  - used, by one that did not (the payer signed a second authorization with
 *    the same nonce and spent it elsewhere): failed, nothing of ours ran;
 *  - unused and past validBefore (by the chain's clock): failed, and nothing
 *    can ever be charged for it;
 *  - otherwise not decided yet (undefined): asked again later.
 */

/** How far back a used authorization's transaction is looked for when its hash is not known (blocks). */
const LOG_WINDOW = 10_000n;

const authorizationUsed = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');

export type SettlementOutcome = { settled: { hash: Hex; receipt: PaymentReceipt } } | { failed: string } | undefined;

type Row = Pick<PaymentsTable, 'authorization_key' | 'protocol' | 'network' | 'amount' | 'pay_to' | 'transaction_hash' | 'valid_before'>;

export async function settlementOutcome(client: PublicClient, row: Row): Promise<SettlementOutcome> {
  // `<chainId>:<token>:<payer>:<nonce>` (records.ts).
  const [, asset, payer, nonce] = row.authorization_key.split(':') as [string, Hex, Hex, Hex];
  const used = await client.readContract({ address: asset, abi: eip3009ABI, functionName: 'authorizationState', args: [payer, nonce] });
  if (!used) {
    if (row.valid_before === null || !/^\d+$/.test(row.valid_before)) return undefined;
    const latest = await client.getBlock({ blockTag: 'latest' });
    if (latest.timestamp < BigInt(row.valid_before)) return undefined;
    const expired = new Date(Number(row.valid_before) * 1000).toISOString();
    return { failed: `the payment authorization expired unused at ${expired}: nothing was charged` };
  }
  const pays = (receipt: TransactionReceipt) => receipt.status === 'success' && paysExactly(receipt.logs, asset, payer, row.pay_to, BigInt(row.amount));
  const known = row.transaction_hash ? await client.getTransactionReceipt({ hash: row.transaction_hash as Hex }).catch(() => undefined) : undefined;
  let receipt = known && pays(known) ? known : undefined;
  if (!receipt) {
    // Used by another transaction than the one recorded (a replacement), or by one whose hash was never recorded.
    const head = await client.getBlockNumber();
    const usedIn = (window: bigint) =>
      client.getLogs({
        address: asset,
        event: authorizationUsed,
        args: { authorizer: payer, nonce },
        fromBlock: head > window ? head - window : 0n,
        toBlock: head,
      });
    // Some providers refuse a range this long: then the last thousand blocks.
    const logs = await usedIn(LOG_WINDOW).catch(() => usedIn(LOG_WINDOW / 10n));
    const log = logs.at(-1);
    if (!log?.transactionHash) return { failed: `the payment authorization was used by a transaction not found in the recent blocks` };
    receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
    if (!pays(receipt)) return { failed: `the payment authorization was used by transaction ${receipt.transactionHash}, which did not pay ${row.pay_to}` };
  }
  const hash = receipt.transactionHash;
  const paymentReceipt: PaymentReceipt =
    row.protocol === 'x402'
      ? { protocol: 'x402', settlement: { success: true, transaction: hash, network: row.network as `${string}:${string}`, payer: getAddress(payer) } }
      : { protocol: 'mpp', receipt: Receipt.from({ method: Types.paymentMethod, reference: hash, status: 'success', timestamp: new Date().toISOString() }) };
  return { settled: { hash, receipt: paymentReceipt } };
}
