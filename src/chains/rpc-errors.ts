import { BaseError, HttpRequestError, SocketClosedError, TimeoutError, WebSocketRequestError } from 'viem';
import { ServiceError } from '../errors.ts';

/**
 * Telling "the node could not be reached" apart from "the node answered that
 * the call reverts". An unreachable RPC must never be reported as a revert:
 * a caller would fix a transaction that was never wrong.
 */

/** True when the error is a transport failure (connection refused, timeout, closed socket, non-JSON-RPC HTTP error). */
export function isRpcUnreachable(error: unknown): boolean {
  if (!(error instanceof BaseError)) return error instanceof TypeError && /fetch failed/i.test(error.message);
  return Boolean(
    error.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof SocketClosedError || e instanceof WebSocketRequestError),
  );
}

/** Thrown by chain helpers when the node could not be asked at all. */
export class RpcUnavailableError extends Error {
  constructor(
    readonly chainId: number,
    cause: unknown,
  ) {
    super(`The RPC of chain ${chainId} could not be reached.`, { cause });
    this.name = 'RpcUnavailableError';
  }
}

/** Throws RpcUnavailableError for a transport failure, else rethrows the error unchanged. */
export function rethrowUnreachable(chainId: number, error: unknown): never {
  if (isRpcUnreachable(error)) throw new RpcUnavailableError(chainId, error);
  throw error;
}

/** The answer an edge renders: 503 naming the chain, never its URL. */
export const rpcUnavailable = (chain: { name: string; chainId: number }, action = 'nothing was signed or sent') =>
  new ServiceError(
    503,
    'rpc_unavailable',
    `The RPC node of ${chain.name} (chain ${chain.chainId}) could not be reached; ${action}. Retry later; this is not a revert.`,
    { chainId: chain.chainId, retryable: true },
    { 'Retry-After': '5' },
  );

/** Runs `work`; a transport failure (or RpcUnavailableError) becomes the 503 above, anything else passes through. */
export async function orRpcUnavailable<T>(chain: { name: string; chainId: number }, work: () => Promise<T>, action?: string): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RpcUnavailableError || isRpcUnreachable(error)) throw rpcUnavailable(chain, action);
    throw error;
  }
}
