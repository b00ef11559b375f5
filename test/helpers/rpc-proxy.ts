import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, type Chain, type PublicClient } from 'viem';
import { rpcTransport } from '../../src/chains/rpc-transport.ts';
import { startTestChain, type TestChain } from './anvil.ts';

/**
 * A JSON-RPC proxy in front of a real node (anvil): it counts the calls it forwards, and on request answers
 * as another node would: named methods refused as by a node without them (JSON-RPC -32601), batches refused
 * as by a node without batch support, broadcasts held back until a promise settles.
 */

type Call = { id?: unknown; method: string; params?: unknown };

/** The methods that broadcast a transaction. */
export const BROADCASTS = new Set(['eth_sendRawTransaction', 'eth_sendRawTransactionSync']);

export interface RpcProxy {
  url: string;
  /** Calls forwarded (or refused) so far, by method. */
  calls: Map<string, number>;
  count(method: string): number;
  /** Broadcasts in both forms (plain and answered with the receipt). */
  broadcasts(): number;
  /** Methods answered with -32601 "Method not found". */
  refused: Set<string>;
  /** Methods whose request is answered 403 with an HTML page, as some providers answer a method they do not offer. */
  forbidden: Set<string>;
  /** Answer every batch as a node without batch support does. */
  refuseBatches: boolean;
  /** Per method, a change made to the node's answer (`{ result }` or `{ error }`) before it is passed on: a node answering wrongly. */
  tamper: Map<string, (answer: { result?: unknown; error?: unknown }) => { result?: unknown; error?: unknown }>;
  /** Per request that carried broadcasts, how many. */
  broadcastRequests: number[];
  /** While set, requests carrying broadcasts (or a method in `holdMethods`) wait for it. */
  hold: Promise<void> | undefined;
  /** Methods held like broadcasts while `hold` is set: a node that stops answering them. */
  holdMethods: Set<string>;
  close(): Promise<void>;
}

export async function startRpcProxy(target: string): Promise<RpcProxy> {
  const post = async (body: string) => {
    const answer = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: answer.status, text: await answer.text() };
  };
  const refusal = (call: Call) => ({ jsonrpc: '2.0', id: call.id, error: { code: -32601, message: `Method not found: ${call.method}` } });

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const message = JSON.parse(body) as Call | Call[];
    const messages = [message].flat();
    for (const m of messages) proxy.calls.set(m.method, (proxy.calls.get(m.method) ?? 0) + 1);
    const broadcasts = messages.filter((m) => BROADCASTS.has(m.method)).length;
    if (broadcasts) proxy.broadcastRequests.push(broadcasts);
    if (broadcasts || messages.some((m) => proxy.holdMethods.has(m.method))) await proxy.hold;
    const reply = (status: number, answer: string) => res.writeHead(status, { 'content-type': 'application/json' }).end(answer);
    try {
      if (messages.some((m) => proxy.forbidden.has(m.method))) return void res.writeHead(403, { 'content-type': 'text/html' }).end('<h1>Forbidden</h1>');
      if (Array.isArray(message) && proxy.refuseBatches)
        return reply(200, JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } }));
      if (!messages.some((m) => proxy.refused.has(m.method) || proxy.tamper.has(m.method))) {
        const answer = await post(body);
        return reply(answer.status, answer.text);
      }
      const answers = await Promise.all(
        messages.map(async (m) => {
          if (proxy.refused.has(m.method)) return refusal(m);
          const answer = JSON.parse((await post(JSON.stringify(m))).text) as { result?: unknown; error?: unknown };
          const change = proxy.tamper.get(m.method);
          return change ? { jsonrpc: '2.0', id: m.id, ...change(answer) } : answer;
        }),
      );
      reply(200, JSON.stringify(Array.isArray(message) ? answers : answers[0]));
    } catch {
      // The node went away under a call it held (a broadcast waiting to be mined when the test stopped it).
      if (!res.headersSent) reply(502, '{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const proxy: RpcProxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: new Map(),
    count: (method) => proxy.calls.get(method) ?? 0,
    broadcasts: () => [...BROADCASTS].reduce((sum, method) => sum + proxy.count(method), 0),
    refused: new Set(),
    forbidden: new Set(),
    refuseBatches: false,
    tamper: new Map(),
    broadcastRequests: [],
    hold: undefined,
    holdMethods: new Set(),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return proxy;
}

/** A chain client as the gateway makes them (its own transport, no retries) to `url`: a proxy in front of `chain`'s node. */
export const gatewayClient = (chain: Chain, url: string) =>
  createPublicClient({ chain, transport: rpcTransport(url, { timeout: 10_000, retryCount: 0 }) }) as PublicClient;

/** anvil behind a proxy that counts its calls, and a gateway-style client through the proxy; `stop` ends both. */
export async function startProxiedChain(): Promise<{ chain: TestChain; proxy: RpcProxy; client: PublicClient; stop(): Promise<void> }> {
  const chain = await startTestChain(31337);
  const proxy = await startRpcProxy(chain.url);
  return {
    chain,
    proxy,
    client: gatewayClient(chain.chain, proxy.url),
    async stop() {
      await proxy.close();
      await chain.stop();
    },
  };
}
