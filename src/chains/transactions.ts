import { z } from 'zod';
import {
  BaseError,
  decodeErrorResult,
  keccak256,
  RpcRequestError,
  TransactionNotFoundError,
  WaitForTransactionReceiptTimeoutError,
  type Abi,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { buildRequest } from 'viem/utils';
import type { BroadcastResult, NonceManager } from './nonces.ts';
import { waitForReceipt } from './receipt-watcher.ts';
import { isRpcUnreachable, RpcUnavailableError } from './rpc-errors.ts';
import { BatchUnsupportedError, requestBatchOf } from './rpc-transport.ts';
import { isSyncTimeout, lacksSyncBroadcast, receiptOf, syncAnswer, syncBroadcasts, syncCall } from './sync-broadcast.ts';

/**
 * Sign once, store the hash, broadcast, verify (DESIGN "Money paths"). The
 * hash is handed to `onSigned` before the bytes leave the process, so a crash
 * after broadcast leaves evidence on record, never a reason to sign again.
 */

export interface TransactionRequest {
  to: Address;
  data?: Hex;
  value: bigint;
}

/** A transaction's receipt as re-fetched from the chain: the shape every record and response carries. */
export const verifiedReceiptSchema = z.object({
  hash: z.templateLiteral(['0x', z.string()]),
  verified: z.boolean().describe('True only when the receipt was read and the transaction succeeded'),
  receiptStatus: z
    .enum(['success', 'reverted', 'not_found', 'timeout'])
    .optional()
    .describe('Absent when the chain could not be read conclusively (RPC failure): keep polling'),
  blockNumber: z.number().optional(),
  gasUsed: z.string().optional(),
  effectiveGasPrice: z.string().optional(),
  gasUsedWei: z.string().optional().describe('gasUsed × effectiveGasPrice, in wei'),
  verifiedAt: z.string(),
});
export type VerifiedReceipt = z.output<typeof verifiedReceiptSchema>;
export type ReceiptStatus = NonNullable<VerifiedReceipt['receiptStatus']>;

/** The chain refused the transaction before it was signed (estimate reverted, gas above a cap). */
export class PreflightError extends Error {
  constructor(
    message: string,
    readonly reason: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'PreflightError';
  }
}

/** The node rejected the signed bytes outright: nothing was broadcast. */
export class BroadcastRejectedError extends Error {
  constructor(
    message: string,
    readonly hash: Hex,
  ) {
    super(message);
    this.name = 'BroadcastRejectedError';
  }
}

export const HYPEREVM_CHAIN_ID = 999;
const HYPEREVM_GAS_CAP = 3_000_000n;

export const defaultGasLimitMultiplier = (chainId: number) => (chainId === HYPEREVM_CHAIN_ID ? '1.5' : '2');

/** estimate × multiplier, exactly (the multiplier is a decimal string such as "1.5"), rounded up. */
export function applyGasMultiplier(estimate: bigint, multiplier: string): bigint {
  const [whole = '0', fraction = ''] = multiplier.split('.');
  const scale = 10n ** BigInt(fraction.length);
  const scaled = BigInt(whole + fraction);
  return (estimate * scaled + scale - 1n) / scale;
}

/** A revert reason a person can act on, decoded against the ABI (and extra error ABIs) when possible. */
export function revertReason(error: unknown, abi?: Abi): string {
  if (!(error instanceof BaseError)) return error instanceof Error ? error.message : String(error);
  const withData = error.walk((e) => typeof (e as { data?: unknown }).data === 'string' && /^0x[0-9a-f]*$/i.test((e as { data: string }).data)) as {
    data?: Hex;
  } | null;
  if (withData?.data && withData.data !== '0x' && abi) {
    try {
      const decoded = decodeErrorResult({ abi, data: withData.data });
      const args = (decoded.args ?? []).map((a) => (typeof a === 'bigint' ? a.toString() : JSON.stringify(a)));
      return `${decoded.errorName}(${args.join(', ')})`;
    } catch {
      /* fall through to viem's own text */
    }
  }
  const revert = error.walk((e) => (e as { reason?: unknown }).reason !== undefined) as { reason?: string } | null;
  if (revert?.reason) return revert.reason;
  return error.shortMessage || error.message;
}

export interface Simulation {
  gasEstimate: bigint;
  wouldRevert: boolean;
  reason?: string;
}

/**
 * Dry run: estimate gas for the exact call; a revert is reported, not thrown.
 * An unreachable node throws RpcUnavailableError: that is not a revert.
 */
export async function simulateTransaction(client: PublicClient, from: Address, request: TransactionRequest, abi?: Abi): Promise<Simulation> {
  try {
    // eth_call checks the balance covers value + fees; some nodes' estimateGas does not.
    await client.call({ account: from, to: request.to, data: request.data, value: request.value });
    const gasEstimate = await client.estimateGas({ account: from, to: request.to, data: request.data, value: request.value });
    return { gasEstimate, wouldRevert: false };
  } catch (error) {
    if (isRpcUnreachable(error)) throw new RpcUnavailableError(client.chain!.id, error);
    return { gasEstimate: 0n, wouldRevert: true, reason: revertReason(error, abi) };
  }
}

export interface SendOptions {
  gasLimitMultiplier?: string;
  abi?: Abi;
  /**
   * Called with the hash and raw bytes before broadcast; must persist them
   * (throwing aborts the send). With `replaceable`, it may be called again
   * with bytes re-signed for another nonce, which replace the first: those
   * were never broadcast.
   */
  onSigned(hash: Hex, raw: Hex): Promise<void>;
  /** The store overwrites on a second `onSigned`: signing may start before this wallet's earlier sends are answered (src/chains/nonces.ts). */
  replaceable?: boolean;
  /** A gas limit the caller already knows (a repeat of a call it estimated before): skips the estimate, so a revert is mined, not refused. */
  gas?: bigint;
}

/** Fee quotes are shared by the sends of the next second on one chain (two RPC round trips each otherwise). */
const FEE_QUOTE_MS = 1_000;
const feeQuotes = new WeakMap<PublicClient, { at: number; fees: Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> }>();

function feesPerGas(client: PublicClient) {
  const quote = feeQuotes.get(client);
  if (quote && Date.now() - quote.at < FEE_QUOTE_MS) return quote.fees;
  const fees = client.estimateFeesPerGas();
  feeQuotes.set(client, { at: Date.now(), fees });
  // A failed quote is not reused.
  fees.catch(() => feeQuotes.get(client)?.fees === fees && feeQuotes.delete(client));
  return fees;
}

/** How the node answered a broadcast (src/chains/nonces.ts acts on it). */
function broadcastResult(error: unknown): BroadcastResult {
  if (isAlreadyKnown(error) || isSyncTimeout(error)) return 'sent';
  // A JSON-RPC error answer means the node refused the bytes; anything else (timeout, lost connection) may have reached it.
  if (!(error instanceof BaseError && error.walk((e) => e instanceof RpcRequestError))) return 'uncertain';
  return /nonce too (low|high)|replacement transaction underpriced|nonce.*(gap|already used)/i.test(error.message) ? 'nonce_conflict' : 'rejected';
}

/** A broadcast send: its hash, and its receipt when the node answered the broadcast with it (src/chains/sync-broadcast.ts). */
export interface BroadcastSend {
  hash: Hex;
  receipt?: TransactionReceipt;
}

export async function signAndBroadcast(
  deps: { client: PublicClient; account: LocalAccount; nonces: NonceManager },
  request: TransactionRequest,
  options: SendOptions,
): Promise<BroadcastSend> {
  const { client, account } = deps;
  const chainId = client.chain!.id;
  // Asked alongside the estimate; a failed quote is an RPC failure, never a revert (awaited below).
  const quote = feesPerGas(client);
  quote.catch(() => {});
  // Asked now (at most once a second), so the broadcast need not wait for it.
  void syncBroadcasts(client);
  let estimate: bigint;
  try {
    estimate = options.gas ?? (await client.estimateGas({ account: account.address, to: request.to, data: request.data, value: request.value }));
  } catch (error) {
    if (isRpcUnreachable(error)) throw new RpcUnavailableError(chainId, error);
    const reason = revertReason(error, options.abi);
    throw new PreflightError(`The transaction would revert: ${reason}`, reason);
  }
  const gas = options.gas ?? applyGasMultiplier(estimate, options.gasLimitMultiplier ?? defaultGasLimitMultiplier(chainId));
  if (chainId === HYPEREVM_CHAIN_ID && gas > HYPEREVM_GAS_CAP) {
    throw new PreflightError(
      `Gas limit ${gas} (estimate ${estimate} × ${options.gasLimitMultiplier ?? '1.5'}) exceeds chain 999's 3,000,000 gas block cap; nothing was signed.`,
      'gas_limit_exceeds_block_cap',
      { gasLimit: gas.toString(), gasEstimate: estimate.toString(), limit: HYPEREVM_GAS_CAP.toString() },
    );
  }

  const fees = await quote;
  const signFor = (nonce: number, tx: { gas: bigint; to?: Address | null; data?: Hex; value?: bigint }, at = fees) =>
    account.signTransaction({ type: 'eip1559', chainId, nonce, maxFeePerGas: at.maxFeePerGas, maxPriorityFeePerGas: at.maxPriorityFeePerGas, ...tx });
  const { signed, result } = await deps.nonces.send<Signed>(client, account.address, {
    replaceable: options.replaceable ?? false,
    async sign(nonce) {
      const raw = await signFor(nonce, { gas, to: request.to, data: request.data, value: request.value });
      const hash = keccak256(raw);
      await options.onSigned(hash, raw);
      return { hash, raw };
    },
    async broadcast(signed) {
      return (await broadcastAll(client, [signed]))[0]!;
    },
    broadcastGroup: (group) => broadcastAll(client, group),
    async fill(nonce) {
      const moveNothing = { to: account.address, value: 0n };
      // A fill may come a while after this send (a heal, src/chains/shared-nonces.ts): priced at today's fees.
      const [fillGas, fillFees] = await Promise.all([client.estimateGas({ account: account.address, ...moveNothing }), feesPerGas(client)]);
      return (await sendRaw(client, await signFor(nonce, { ...moveNothing, gas: fillGas }, fillFees))).result;
    },
  });
  if (result === 'rejected' || result === 'nonce_conflict') {
    throw new BroadcastRejectedError(`The node rejected the transaction: ${signed.refusal ?? ''}`, signed.hash);
  }
  return { hash: signed.hash, ...(signed.receipt ? { receipt: signed.receipt } : {}) };
}

/**
 * A send's signed bytes; `refusal` keeps the node's own words when it refused them, for the error the send ends
 * with, and `receipt` the receipt a sync broadcast was answered with.
 */
interface Signed {
  hash: Hex;
  raw: Hex;
  refusal?: string;
  receipt?: TransactionReceipt;
}

type Sent = { result: BroadcastResult; refusal?: string; receipt?: TransactionReceipt };

/** How a failed broadcast reads: the node's own words (details), never the URL viem puts in the full message. */
function sentAfter(error: unknown): Sent {
  const refusal =
    error instanceof BaseError
      ? error.details && error.details !== error.shortMessage
        ? `${error.shortMessage} (${error.details})`
        : error.shortMessage
      : String(error);
  return { result: broadcastResult(error), refusal };
}

/** One broadcast, classified; with `sync`, the send's own, answered with its receipt (src/chains/sync-broadcast.ts). */
async function sendRaw(client: PublicClient, raw: Hex, sync?: Signed): Promise<Sent> {
  try {
    if (sync) {
      const sent = await syncAnswer(client, client.request(syncCall(raw) as never, { retryCount: 0 }), [sync.hash]);
      // Held by the node unanswered: sent, its receipt to be waited for.
      return 'held' in sent ? { result: 'sent' } : { result: 'sent', receipt: receiptOf(client, sent.answer) };
    }
    await client.sendRawTransaction({ serializedTransaction: raw });
    return { result: 'sent' };
  } catch (error) {
    // No such method: nothing was sent, so the same bytes go out the plain way.
    if (sync && lacksSyncBroadcast(client, error)) return sendRaw(client, raw);
    return sentAfter(error);
  }
}

const batchless = new WeakSet<PublicClient>();

/** A batch entry's error mapped as viem maps a single call's (the same error classes, so the same words and outcome). */
const rethrowAsViem = buildRequest(async ({ error }: { error: unknown }) => Promise.reject(error), { retryCount: 0 });
const asViemError = (error: unknown) => rethrowAsViem({ method: 'eth_sendRawTransaction', error } as never).catch((e: unknown) => e);

/**
 * Broadcasts in nonce order, each classified (and its refusal kept on it): several in one JSON-RPC batch
 * when the client's transport sends batches, so they reach the node in order in one round trip (and a
 * devnet mining on arrival puts them in one block); one at a time, each after the previous was answered,
 * on a node without batches.
 */
async function broadcastAll(client: PublicClient, group: readonly Signed[]): Promise<BroadcastResult[]> {
  const batch = requestBatchOf(client.transport);
  const sync = await syncBroadcasts(client);
  let sent: Sent[] = [];
  if (group.length > 1 && batch && !batchless.has(client)) {
    try {
      const calls = group.map(({ raw }) => (sync ? syncCall(raw) : { method: 'eth_sendRawTransaction', params: [raw] }));
      const reply = sync
        ? await syncAnswer(
            client,
            batch(calls),
            group.map((s) => s.hash),
          )
        : { answer: await batch(calls) };
      if ('held' in reply) {
        // Taken in but not all answered (src/chains/sync-broadcast.ts): one the node does not hold is sent again, plainly, in order.
        for (const [i, held] of reply.held.entries()) sent.push(held ? { result: 'sent' } : await sendRaw(client, group[i]!.raw));
      }
      // No such method: none was sent, and the node is not asked again, so the group goes again as a plain batch.
      else if (
        sync &&
        (await Promise.all(reply.answer.map(async (a) => 'error' in a && lacksSyncBroadcast(client, await asViemError(a.error))))).every(Boolean)
      )
        return broadcastAll(client, group);
      else
        sent = await Promise.all(
          reply.answer.map(async (a): Promise<Sent> => {
            if ('error' in a) return sentAfter(await asViemError(a.error));
            return sync ? { result: 'sent', receipt: receiptOf(client, a.result) } : { result: 'sent' };
          }),
        );
    } catch (error) {
      if (!(error instanceof BatchUnsupportedError)) sent = group.map(() => sentAfter(error));
      else batchless.add(client);
    }
  }
  for (const signed of group.slice(sent.length)) sent.push(await sendRaw(client, signed.raw, sync ? signed : undefined));
  sent.forEach((s, i) => {
    const signed = group[i]!;
    if (s.refusal) signed.refusal = s.refusal;
    // Only the receipt of this very transaction: any other answer is left to the receipt wait, which asks by hash.
    if (s.receipt?.transactionHash?.toLowerCase() === signed.hash.toLowerCase()) signed.receipt = s.receipt;
  });
  return sent.map((s) => s.result);
}

const isAlreadyKnown = (error: unknown) => /already known|known transaction|already imported/i.test(String((error as Error)?.message ?? ''));

const maxOf = (...values: bigint[]) => values.reduce((a, b) => (b > a ? b : a));

/**
 * A send of `account` that the node still holds unmined although it is first in line (its nonce is the
 * account's mined count): the same transaction re-signed for the same nonce with fees a fifth higher (at least
 * today's quote), and broadcast. Only one of the two can be mined. Its hash, or undefined when the send was
 * mined meanwhile, is unknown to the node, is not this account's, or waits behind an earlier nonce.
 *
 * anvil's pool can file a transaction as waiting on the nonce before it while that one is being mined, and then
 * never promotes it: sending the same bytes again is refused as already imported, mining does not help, and every
 * later send of the wallet queues behind it. A replacement is taken at once, and the ones behind follow. On any
 * chain it is what a wallet does for a send left behind by its fee.
 */
export async function replaceStuckSend(client: PublicClient, account: LocalAccount, hash: Hex): Promise<Hex | undefined> {
  const tx = await client.getTransaction({ hash }).catch(() => undefined);
  if (!tx || tx.blockNumber !== null || tx.from.toLowerCase() !== account.address.toLowerCase() || tx.type !== 'eip1559') return undefined;
  if ((await client.getTransactionCount({ address: account.address, blockTag: 'latest' })) !== tx.nonce) return undefined;
  const quote = await feesPerGas(client);
  const bump = (fee: bigint) => fee + fee / 5n + 1n;
  const maxPriorityFeePerGas = maxOf(bump(tx.maxPriorityFeePerGas), quote.maxPriorityFeePerGas);
  const maxFeePerGas = maxOf(bump(tx.maxFeePerGas), quote.maxFeePerGas, maxPriorityFeePerGas);
  const raw = await account.signTransaction({
    type: 'eip1559',
    chainId: client.chain!.id,
    nonce: tx.nonce,
    gas: tx.gas,
    to: tx.to,
    data: tx.input,
    value: tx.value,
    maxFeePerGas,
    maxPriorityFeePerGas,
  });
  return (await sendRaw(client, raw)).result === 'sent' ? keccak256(raw) : undefined;
}

/** Re-sends stored bytes (same nonce, same hash): safe to repeat, can never spend twice. */
export async function rebroadcast(client: PublicClient, raw: Hex): Promise<void> {
  try {
    await client.sendRawTransaction({ serializedTransaction: raw });
  } catch (error) {
    if (!isAlreadyKnown(error) && !/nonce too low/i.test(String((error as Error).message))) throw error;
  }
}

/**
 * Reads the receipt, waiting up to `timeoutMs`. No receipt in time: `timeout`
 * when the node still knows the transaction, `not_found` when it does not.
 * An RPC failure is inconclusive (no receiptStatus): the caller keeps polling.
 * `mined`: the receipt the broadcast was answered with, taken as read.
 */
export async function verifyTransaction(client: PublicClient, hash: Hex, timeoutMs: number, mined?: TransactionReceipt): Promise<VerifiedReceipt> {
  const verifiedAt = () => new Date().toISOString();
  try {
    const receipt = mined ?? (await waitForReceipt(client, hash, timeoutMs));
    const gasUsedWei = receipt.gasUsed * receipt.effectiveGasPrice;
    return {
      hash,
      verified: receipt.status === 'success',
      receiptStatus: receipt.status === 'success' ? 'success' : 'reverted',
      blockNumber: Number(receipt.blockNumber),
      gasUsed: receipt.gasUsed.toString(),
      effectiveGasPrice: receipt.effectiveGasPrice.toString(),
      gasUsedWei: gasUsedWei.toString(),
      verifiedAt: verifiedAt(),
    };
  } catch (error) {
    if (!(error instanceof WaitForTransactionReceiptTimeoutError)) return { hash, verified: false, verifiedAt: verifiedAt() };
    try {
      await client.getTransaction({ hash });
      return { hash, verified: false, receiptStatus: 'timeout', verifiedAt: verifiedAt() };
    } catch (lookup) {
      if (lookup instanceof TransactionNotFoundError || (lookup instanceof BaseError && lookup.walk((e) => e instanceof TransactionNotFoundError))) {
        return { hash, verified: false, receiptStatus: 'not_found', verifiedAt: verifiedAt() };
      }
      return { hash, verified: false, verifiedAt: verifiedAt() };
    }
  }
}
