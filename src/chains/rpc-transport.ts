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
          let answer: Awaited<ReturnType<typeof post>>;
          try {
            answer = await post(JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params }));
          } catch (error) {
            if (error instanceof TimeoutError || error instanceof ResponseBodyTooLargeError) throw error;
            throw new HttpRequestError({ body, cause: error as Error, url });
          }
          let data: { result?: unknown; error?: { code: number; message: string; data?: unknown } };
          try {
            data = JSON.parse(answer.text || '{}');
          } catch (error) {
            if (answer.status >= 200 && answer.status < 300) throw new HttpRequestError({ body, cause: error as Error, url });
            data = { error: answer.text as never };
          }
          const ok = answer.status >= 200 && answer.status < 300;
          // As viem's transport: a JSON-RPC error is the node's answer, whatever the status; other non-2xx answers are HTTP failures.
          const rpcError = data.error && typeof data.error.code === 'number' && typeof data.error.message === 'string';
          if (!ok && !rpcError) throw new HttpRequestError({ body, details: JSON.stringify(data.error) || answer.statusText, status: answer.status, url });
          if (data.error) throw new RpcRequestError({ body, error: data.error, url });
          return data.result;
        }) as EIP1193RequestFn,
      },
      { url },
    );
}
