import { BaseError, formatTransactionReceipt, HttpRequestError, MethodNotFoundRpcError, MethodNotSupportedRpcError, RpcRequestError } from 'viem';
import type { Hex, PublicClient, TransactionReceipt } from 'viem';

/**
 * A broadcast answered with its receipt: eth_sendRawTransactionSync (EIP-7966) on a node that mines each
 * transaction as it arrives (anvil with automine on: the embedded devnet and the test chains). The plain broadcast
 * is answered about a millisecond before its receipt can be read, so each send then read its receipt again and
 * again (2.5 reads per paid call's settlement at ten callers, each a POST for the gateway and the node). A node
 * that holds transactions for a block would hold the broadcast, and the wallet's next ones behind it (they go out
 * in nonce order), for that block: so it is used only while the node says it mines on arrival (anvil_getAutomine,
 * asked at most once a PROBE_MS), and a broadcast not answered within SYNC_WAIT_MS whose transaction the node
 * holds (automine turned off since the last ask, a stalled pool) counts as sent, its receipt waited for as usual
 * (syncAnswer).
 */

const PROBE_MS = 1_000;
export const SYNC_WAIT_MS = 2_000;

/** anvil_getAutomine's answer, asked at most once a PROBE_MS: whether the node mines on arrival, and whether it is anvil at all. */
const probes = new WeakMap<PublicClient, { at: number; automine: Promise<boolean>; anvil: Promise<boolean> }>();
/** Nodes that answered the probe with an error: not anvil, never asked again. */
const notAnvil = new WeakSet<PublicClient>();
/** Nodes that answered a sync broadcast as a method they lack (an older anvil): no sync broadcasts. */
const noSync = new WeakSet<PublicClient>();

function probe(client: PublicClient) {
  const known = probes.get(client);
  if (known && Date.now() - known.at < PROBE_MS) return known;
  const answer = (client.request({ method: 'anvil_getAutomine' } as never, { retryCount: 0 }) as Promise<unknown>).then(
    (on) => (typeof on === 'boolean' ? on : undefined),
    (error: unknown) => {
      // The node answered that it has no such method (any real chain's node or provider): no devnet, for good.
      // Unreachable: asked again later.
      if (isNodeAnswer(error)) notAnvil.add(client);
      return undefined;
    },
  );
  const probed = { at: Date.now(), automine: answer.then((on) => on === true), anvil: answer.then((on) => on !== undefined) };
  probes.set(client, probed);
  return probed;
}

/** Whether broadcasts to this node go out as eth_sendRawTransactionSync; asked of the node at most once a PROBE_MS. */
export function syncBroadcasts(client: PublicClient): Promise<boolean> {
  if (notAnvil.has(client) || noSync.has(client)) return Promise.resolve(false);
  return probe(client).automine;
}

/** Whether the node is anvil (it answers anvil_getAutomine), whatever its mining mode; asked as syncBroadcasts asks. */
export function isAnvil(client: PublicClient): Promise<boolean> {
  if (notAnvil.has(client)) return Promise.resolve(false);
  return probe(client).anvil;
}

/** The node (or the provider in front of it) answered: a JSON-RPC error, or an HTTP status without one (a provider's 403 page). */
const isNodeAnswer = (error: unknown) =>
  error instanceof BaseError &&
  Boolean(error.walk((e) => e instanceof RpcRequestError || (e instanceof HttpRequestError && typeof e.status === 'number' && e.status >= 400)));

/** The node has no eth_sendRawTransactionSync (an older anvil): nothing was sent, and it is not asked again. */
export function lacksSyncBroadcast(client: PublicClient, error: unknown): boolean {
  // viem maps -32601 to MethodNotFoundRpcError, on a single call and on a batch entry (asViemError) alike.
  const missing = error instanceof BaseError && Boolean(error.walk((e) => e instanceof MethodNotFoundRpcError || e instanceof MethodNotSupportedRpcError));
  if (missing) noSync.add(client);
  return missing;
}

/** EIP-7966's answer to a transaction accepted but not mined within the wait (anvil: "Transaction confirmation timeout"): it was sent. */
export const isSyncTimeout = (error: unknown) =>
  /transaction confirmation timeout|wasn't processed within|not processed within/i.test(String((error as Error)?.message ?? ''));

/** The receipt as viem's own actions return it (the chain's formatter, else viem's). */
export const receiptOf = (client: PublicClient, raw: unknown): TransactionReceipt =>
  (client.chain?.formatters?.transactionReceipt?.format ?? formatTransactionReceipt)(raw as never) as TransactionReceipt;

/**
 * A sync broadcast's answer (`answer`). Not answered within SYNC_WAIT_MS (automine turned off since the node was
 * asked, a pool holding a transaction, a batch whose later nonces wait behind one the node refused): the node is
 * asked which of the transactions it holds; if any, the request was taken in, and `held` tells which (those count
 * as sent, their receipts waited for as usual; one it does not hold was refused, and is sent again the plain way
 * for the node's own words). If none, the request has not been taken in yet, and its own answer decides, as a
 * plain broadcast's would.
 */
export async function syncAnswer<T>(client: PublicClient, work: Promise<T>, hashes: readonly Hex[]): Promise<{ answer: T } | { held: boolean[] }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), SYNC_WAIT_MS);
  });
  const answered = work.then((answer) => ({ answer }));
  answered.catch(() => {});
  const first = await Promise.race([answered, late]).finally(() => clearTimeout(timer));
  if (first) return first;
  const held = await Promise.all(hashes.map((hash) => client.getTransaction({ hash }).then(Boolean, () => false)));
  return held.some(Boolean) ? { held } : answered;
}

/** One sync broadcast's JSON-RPC call. */
export const syncCall = (raw: Hex) => ({ method: 'eth_sendRawTransactionSync', params: [raw] });
