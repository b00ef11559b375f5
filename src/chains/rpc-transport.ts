import http from 'node:http';
import https from 'node:https';
import { createTransport, HttpRequestError, ResponseBodyTooLargeError, RpcRequestError, TimeoutError, type EIP1193RequestFn, type Transport } from 'viem';

/**
 * viem's `http` transport, answered over node:http with keep-alive instead of
 * fetch. Measured against anvil (bench notes in the README, Benchmarks →
 * Direct execution): viem's transport builds a web `Request`, a timeout
 * signal and a streamed body reader for every call, about 0.4 ms of CPU per
 * unbatched call and 0.15–0.4 ms batched; this is about 0.12 ms, unbatched,
 * so concurrent calls no longer wait a tick to be batched either.
 *
 * It fails the way viem's transport does, so everything downstream (viem's
 * error mapping and retries, src/chains/rpc-errors.ts telling an unreachable
 * node from a refusal, the broadcast outcome in src/chains/transactions.ts)
 * reads the same errors: a JSON-RPC error answer is an RpcRequestError, a
 * connection failure or a non-2xx answer without one an HttpRequestError, a
 * late answer a TimeoutError.
 */

const MAX_RESPONSE_BYTES = 10_485_760;

export interface RpcTransportOptions {
  timeout: number;
  retryCount: number;
  /** A kept-alive socket idle this long is closed (default 30 s): a client replaced after an RPC URL change leaves nothing open, and a node's proxy rarely closes one under a request. */
  idleMs?: number;
}

const IDLE_MS = 30_000;

let nextId = 0;

export function rpcTransport(url: string, options: RpcTransportOptions): Transport {
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  // One pool per transport; sockets kept between calls (the node's handshake is most of a call's cost).
  const agent = new client.Agent({ keepAlive: true, maxSockets: 64, timeout: options.idleMs ?? IDLE_MS });

  /** One POST; a kept-alive socket the server closed meanwhile is retried once on a fresh one (Node's documented race). */
  const post = (body: string, retried = false): Promise<{ status: number; statusText: string; text: string }> =>
    new Promise((resolve, reject) => {
      const request = client.request(
        target,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          timeout: options.timeout,
        },
        (response) => {
          let text = '';
          let size = 0;
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            size += chunk.length;
            if (size > MAX_RESPONSE_BYTES) {
              response.destroy();
              reject(new ResponseBodyTooLargeError({ size, maxSize: MAX_RESPONSE_BYTES }));
              return;
            }
            text += chunk;
          });
          response.on('error', reject);
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              statusText: response.statusMessage ?? '',
              text,
            }),
          );
        },
      );
      request.on('timeout', () => request.destroy(new TimeoutError({ body: JSON.parse(body), url })));
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (!retried && request.reusedSocket && error.code === 'ECONNRESET') post(body, true).then(resolve, reject);
        else reject(error);
      });
      request.end(body);
    });

  type Answer = Awaited<ReturnType<typeof post>>;
  type Message = { result?: unknown; error?: { code: number; message: string; data?: unknown } };

  /** A JSON-RPC answer as viem's transport reads it: the result, an RpcRequestError, or an HttpRequestError. */
  const read = (answer: Answer, data: Message, body: unknown): unknown => {
    const ok = answer.status >= 200 && answer.status < 300;
    // As viem's transport: a JSON-RPC error is the node's answer, whatever the status; other non-2xx answers are HTTP failures.
    const rpcError = data.error && typeof data.error.code === 'number' && typeof data.error.message === 'string';
    if (!ok && !rpcError)
      throw new HttpRequestError({ body: body as never, details: JSON.stringify(data.error) || answer.statusText, status: answer.status, url });
    if (data.error) throw new RpcRequestError({ body: body as never, error: data.error, url });
    return data.result;
  };

  /** One POST of `message`; a failure names `shown` (what viem's transport names: the call, or the batch). */
  const send = async (message: unknown, shown: unknown): Promise<Answer> => {
    try {
      return await post(JSON.stringify(message));
    } catch (error) {
      if (error instanceof TimeoutError || error instanceof ResponseBodyTooLargeError) throw error;
      throw new HttpRequestError({ body: shown as never, cause: error as Error, url });
    }
  };

  const parse = (answer: Answer, body: unknown): unknown => {
    try {
      return JSON.parse(answer.text || '{}');
    } catch (error) {
      if (answer.status >= 200 && answer.status < 300) throw new HttpRequestError({ body: body as never, cause: error as Error, url });
      return { error: answer.text };
    }
  };

  /**
   * Several calls in one JSON-RPC batch, answered in call order: each a result or the error that call
   * alone would have thrown. A failed POST rejects as one call would; a node that does not answer a batch
   * with an array (no batch support: one JSON-RPC error for the whole batch) rejects with
   * BatchUnsupportedError, having run none of the calls; a non-2xx answer without one fails as a call would.
   */
  const requestBatch = async (calls: readonly { method: string; params?: unknown }[]): Promise<({ result: unknown } | { error: unknown })[]> => {
    const body = calls.map(({ method, params }) => ({ jsonrpc: '2.0', id: ++nextId, method, params }));
    const answer = await send(body, body);
    const data = parse(answer, body);
    if (!Array.isArray(data)) {
      // One error for the whole batch (JSON-RPC 2.0's answer to a batch it will not run), or any answer that is not a list: nothing ran.
      const error = (data as Message).error;
      if (!(error && typeof error.code === 'number')) read(answer, data as Message, body);
      throw new BatchUnsupportedError(url);
    }
    const byId = new Map((data as (Message & { id?: unknown })[]).map((m) => [m.id, m]));
    return body.map((call) => {
      const message = byId.get(call.id);
      if (!message) return { error: new HttpRequestError({ body: call, details: 'The batch answer has no entry for this call', status: answer.status, url }) };
      try {
        return { result: read(answer, message, call) };
      } catch (error) {
        return { error };
      }
    });
  };

  return () =>
    createTransport(
      {
        key: 'http',
        name: 'HTTP JSON-RPC',
        type: 'http',
        retryCount: options.retryCount,
        timeout: options.timeout,
        request: (async ({ method, params }: { method: string; params?: unknown }) => {
          const body = { method, params };
          const answer = await send({ jsonrpc: '2.0', id: ++nextId, method, params }, body);
          return read(answer, parse(answer, body) as Message, body);
        }) as EIP1193RequestFn,
      },
      { url, requestBatch },
    );
}

/** The node answered a JSON-RPC batch with something other than an array: it ran none of the calls. */
export class BatchUnsupportedError extends Error {
  constructor(url: string) {
    super(`${new URL(url).host} does not answer JSON-RPC batches`);
    this.name = 'BatchUnsupportedError';
  }
}

/** The batch call of a client built on rpcTransport (undefined on any other transport). */
export type RequestBatch = (calls: readonly { method: string; params?: unknown }[]) => Promise<({ result: unknown } | { error: unknown })[]>;
export const requestBatchOf = (transport: unknown): RequestBatch | undefined => (transport as { requestBatch?: RequestBatch }).requestBatch;
