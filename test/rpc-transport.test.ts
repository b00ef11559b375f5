import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BaseError, createPublicClient, http as viemHttp, HttpRequestError, parseEther, RpcRequestError, TimeoutError, type PublicClient } from 'viem';
import { rpcTransport } from '../src/chains/rpc-transport.ts';
import { isRpcUnreachable } from '../src/chains/rpc-errors.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { freePort } from './helpers/gateway.ts';

/**
 * The gateway's JSON-RPC transport (node:http with keep-alive instead of
 * fetch) must fail exactly as viem's own http transport does, since viem's
 * error mapping and retries and the gateway's "unreachable, never a revert"
 * rule read those errors. Each case runs both transports against the same
 * server: a real anvil, and a local HTTP server for the failures a node or
 * its proxy can produce (an error page, a JSON-RPC error behind a 500, a hang,
 * an oversized answer, a closed port, a kept-alive socket closed by the server).
 */

let chain: TestChain;
let misbehaving: http.Server;
let base: string;
/** Per path, how the local server answers; `/reset` counts requests to tell a retry from a first try. */
let resets = 0;

beforeAll(async () => {
  chain = await startTestChain(31337);
  misbehaving = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const id = body ? (JSON.parse(body) as { id: number }).id : 0;
      if (req.url === '/page') return void res.writeHead(503, { 'content-type': 'text/html' }).end('<h1>upstream down</h1>');
      if (req.url === '/rpc-error-500')
        return void res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message: 'nonce too low' } }));
      if (req.url === '/hang') return; // never answers
      if (req.url === '/huge')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(`{"jsonrpc":"2.0","id":${id},"result":"${'a'.repeat(11_000_000)}"}`);
      if (req.url === '/idle')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x1' }));
      if (req.url === '/reset') {
        resets++;
        // Answers, then closes the kept-alive socket right after: the next call finds it dead.
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x1' }), () => req.socket.destroy());
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => misbehaving.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(misbehaving.address() as AddressInfo).port}`;
});
afterAll(async () => {
  misbehaving?.closeAllConnections();
  await new Promise((resolve) => misbehaving?.close(resolve));
  await chain?.stop();
});

const OPTIONS = { timeout: 1_000, retryCount: 0 };
const clients = (url: string): [string, PublicClient][] => [
  ['viem http', createPublicClient({ transport: viemHttp(url, OPTIONS) }) as PublicClient],
  ['gateway', createPublicClient({ transport: rpcTransport(url, OPTIONS) }) as PublicClient],
];

/** What the rest of the gateway reads from an error: its class chain, the node's words, reachability, the HTTP status. */
async function outcome(call: Promise<unknown>) {
  try {
    return { result: await call };
  } catch (error) {
    const e = error as BaseError;
    return {
      rpcRequestError: e.walk((x) => x instanceof RpcRequestError) !== null,
      httpRequestError: e.walk((x) => x instanceof HttpRequestError) !== null,
      timeout: e.walk((x) => x instanceof TimeoutError) !== null,
      unreachable: isRpcUnreachable(error),
      status: (e.walk((x) => x instanceof HttpRequestError) as HttpRequestError | null)?.status,
      details: e.details,
      name: e.name,
    };
  }
}

describe('rpc transport', () => {
  test('answers, node refusals and reverts from a real anvil read the same as through viem http', async () => {
    const account = chain.account(3);
    for (const call of [
      (c: PublicClient) => c.getChainId(),
      (c: PublicClient) => c.getBalance({ address: account.address }),
      // The node refuses bytes that are not a transaction: a JSON-RPC error, the node's answer.
      (c: PublicClient) => c.sendRawTransaction({ serializedTransaction: '0x02deadbeef' }),
      // A transfer beyond the balance: the estimate fails as the node said.
      (c: PublicClient) => c.estimateGas({ account: account.address, to: account.address, value: parseEther('1000000000') }),
    ]) {
      const [[, viem], [, ours]] = clients(chain.url);
      expect(await outcome(call(ours))).toEqual(await outcome(call(viem)));
    }
    const refused = await outcome(clients(chain.url)[1]![1].sendRawTransaction({ serializedTransaction: '0x02deadbeef' }));
    expect(refused).toMatchObject({ rpcRequestError: true, unreachable: false });
  });

  test.each([
    ['an HTML error page (503)', '/page', { httpRequestError: true, unreachable: true, status: 503 }],
    ['a JSON-RPC error behind a 500: the node answered', '/rpc-error-500', { rpcRequestError: true, unreachable: false }],
    ['no answer within the timeout', '/hang', { timeout: true, unreachable: true }],
    ['an answer over 10 MB', '/huge', { unreachable: false }],
  ])('%s fails as viem http fails', async (_name, path, expected) => {
    const [[, viem], [, ours]] = clients(`${base}${path}`);
    const theirs = await outcome(viem.getChainId());
    const mine = await outcome(ours.getChainId());
    expect(mine).toMatchObject(expected);
    expect({ ...mine, details: undefined }).toEqual({ ...theirs, details: undefined });
  });

  test('a closed port is unreachable, as through viem http', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const [[, viem], [, ours]] = clients(url);
    const mine = await outcome(ours.getChainId());
    expect(mine).toMatchObject({ httpRequestError: true, unreachable: true, rpcRequestError: false });
    expect((await outcome(viem.getChainId())).unreachable).toBe(true);
  });

  test('a kept-alive socket the server closed is retried once on a fresh one, not reported as a failure', async () => {
    const ours = createPublicClient({ transport: rpcTransport(`${base}/reset`, OPTIONS) });
    resets = 0;
    for (let i = 0; i < 5; i++) expect(await ours.request({ method: 'eth_chainId' })).toBe('0x1');
    expect(resets).toBe(5);
  });

  test('kept-alive sockets left idle are closed by the client (nothing stays open after a client is replaced)', async () => {
    // A server that never closes an idle connection itself: only the client can.
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: '0x1' })));
    });
    server.keepAliveTimeout = 0;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const ours = createPublicClient({ transport: rpcTransport(url, { ...OPTIONS, idleMs: 200 }) });
      const open = () => new Promise<number>((resolve, reject) => server.getConnections((error, n) => (error ? reject(error) : resolve(n))));
      await Promise.all(Array.from({ length: 3 }, () => ours.request({ method: 'eth_chainId' })));
      expect(await open()).toBeGreaterThan(0);
      while ((await open()) > 0) await new Promise((r) => setTimeout(r, 50));
      // A later call opens a fresh socket and is answered as before.
      expect(await ours.request({ method: 'eth_chainId' })).toBe('0x1');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
