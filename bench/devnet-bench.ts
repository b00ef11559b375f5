/**
 * Shared by the onchain benchmarks: a gateway on its own anvil devnet, and a
 * timed loop of concurrent callers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createWalletClient, http, parseEther, publicActions, type Address } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { startAnvil, type AnvilNode } from '../src/chains/anvil.ts';
import { loadConfig } from '../src/config.ts';
import { createGateway, type Gateway } from '../src/gateway.ts';

export interface Sample {
  perSecond: number;
  p50: number;
  p99: number;
  failures: number;
}

/** `connections` concurrent loops for `seconds`; loop `i` calls `iteration(i)`, each call one timed sample. */
export async function timedLoop(seconds: number, connections: number, iteration: (caller: number) => Promise<boolean>): Promise<Sample> {
  const samples: number[] = [];
  let failures = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async (_, caller) => {
      while (performance.now() < until) {
        const start = performance.now();
        if (!(await iteration(caller).catch(() => false))) failures++;
        samples.push(performance.now() - start);
      }
    }),
  );
  samples.sort((a, b) => a - b);
  const at = (q: number) => Math.round(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]! * 10) / 10;
  return { perSecond: samples.length / seconds, p50: at(0.5), p99: at(0.99), failures };
}

/**
 * The transfer anchor: the same transfer with viem alone (sign, send, wait for
 * the receipt) from one of anvil's prefunded accounts, `callers` at a time.
 */
export function viemTransfers(nodeUrl: string, addressIndex: number, to: Address): (seconds: number, callers: number) => Promise<Sample> {
  const account = mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex });
  const chain = {
    id: 31337,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [nodeUrl] } },
  } as const;
  const wallet = createWalletClient({ account, chain, transport: http(nodeUrl) }).extend(publicActions);
  // As the gateway sends (src/chains/nonces.ts): nonces counted here, one per send, and each signed transaction
  // broadcast once the one before it was. viem's own nonce manager re-reads the pending count while earlier sends
  // are still being prepared, and concurrent broadcasts reach the node out of nonce order, where anvil can leave
  // the next nonce queued for good: at 10 in flight the anchor's rows counted thousands of failures, or every
  // send timed out behind the stuck one. A send that fails makes the next one read the count again.
  let nextNonce: Promise<number> | undefined;
  let previousBroadcast: Promise<unknown> = Promise.resolve();
  const send = async () => {
    nextNonce ??= wallet.getTransactionCount({ address: account.address, blockTag: 'pending' });
    const nonce = nextNonce;
    nextNonce = nonce.then((n) => n + 1);
    const before = previousBroadcast;
    let broadcast!: () => void;
    previousBroadcast = new Promise<void>((resolve) => (broadcast = resolve));
    try {
      const request = await wallet.prepareTransactionRequest({ to, value: parseEther('0.000001'), nonce: await nonce });
      const serializedTransaction = await wallet.signTransaction(request);
      await before;
      return await wallet.sendRawTransaction({ serializedTransaction });
    } catch (error) {
      nextNonce = undefined;
      throw error;
    } finally {
      broadcast();
    }
  };
  return (seconds, callers) =>
    timedLoop(seconds, callers, async () => {
      const hash = await send();
      // Bounded, so a transaction the node never mines ends the row with failures instead of hanging the bench.
      return (await wallet.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 30_000 })).status === 'success';
    });
}

export interface DevnetGateway {
  node: AnvilNode;
  gateway: Gateway;
  url: string;
  close(): Promise<void>;
}

/** `work` against a gateway on a fresh devnet (startDevnetGateway), closed after it whatever happens. */
export async function withDevnetGateway<T>(env: Record<string, string>, work: (devnet: DevnetGateway) => Promise<T>): Promise<T> {
  const started = await startDevnetGateway(env);
  try {
    return await work(started);
  } finally {
    await started.close();
  }
}

/** A gateway (rate limits off) whose devnet is a fresh anvil; `env` adds configuration. */
export async function startDevnetGateway(env: Record<string, string> = {}): Promise<DevnetGateway> {
  const node = await startAnvil({ chainId: 31337 });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-bench-devnet-'));
  const gateway = await createGateway(
    loadConfig({
      PORT: '0',
      FLOWGATE_DATA_DIR: dataDir,
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: node.url,
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_BASE_URL: 'http://127.0.0.1:3000',
      ...env,
    }),
  );
  const url = await gateway.listen();
  return {
    node,
    gateway,
    url,
    async close() {
      await gateway.close();
      await node.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
