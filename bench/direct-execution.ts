/**
 * Direct execution on a local anvil: transfers/s through the gateway
 * (validation, guards, sign, store hash, broadcast, verify receipt) against
 * the same transfers sent straight with viem to the same node (the baseline),
 * and p50/p99 latency of `simulate: true`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createWalletClient, http, parseEther, publicActions } from 'viem';
import { mnemonicToAccount, nonceManager } from 'viem/accounts';
import { startAnvil } from '../src/chains/anvil.ts';
import { loadConfig } from '../src/config.ts';
import { createGateway } from '../src/gateway.ts';

interface Sample {
  perSecond: number;
  p50: number;
  p99: number;
  failures: number;
}

async function loop(seconds: number, connections: number, iteration: () => Promise<boolean>): Promise<Sample> {
  const samples: number[] = [];
  let failures = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const start = performance.now();
        if (!(await iteration().catch(() => false))) failures++;
        samples.push(performance.now() - start);
      }
    }),
  );
  samples.sort((a, b) => a - b);
  const at = (q: number) => Math.round(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]! * 10) / 10;
  return { perSecond: samples.length / seconds, p50: at(0.5), p99: at(0.99), failures };
}

export async function benchDirectExecution(seconds: number, connections: number): Promise<void> {
  const node = await startAnvil({ chainId: 31337 });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-bench-direct-'));
  const gateway = await createGateway(
    loadConfig({
      PORT: '0',
      FLOWGATE_DATA_DIR: dataDir,
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: node.url,
      FLOWGATE_RATE_LIMITS: 'off',
      FLOWGATE_BASE_URL: 'http://127.0.0.1:3000',
      EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('1000').toString(),
    }),
  );
  const url = await gateway.listen();
  const headers = { authorization: `Bearer ${gateway.firstStart!.ownerKey}`, 'content-type': 'application/json' };
  const to = '0x000000000000000000000000000000000000bEEF';
  const body = JSON.stringify({ chainId: 31337, recipientAddress: to.toLowerCase(), amount: '0.000001' });
  const simulateBody = JSON.stringify({ chainId: 31337, recipientAddress: to.toLowerCase(), amount: '0.000001', simulate: true });

  // Baseline: the same transfer with viem alone (sign, send, wait for the receipt), one sender, same concurrency.
  const account = mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex: 5, nonceManager });
  const chain = { id: 31337, name: 'anvil', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [node.url] } } } as const;
  const wallet = createWalletClient({ account, chain, transport: http(node.url) }).extend(publicActions);
  const viemRow = await loop(seconds, connections, async () => {
    const hash = await wallet.sendTransaction({ to, value: parseEther('0.000001') });
    return (await wallet.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status === 'success';
  });
  const gatewayRow = await loop(seconds, connections, async () => {
    const res = await fetch(`${url}/api/execute/transfer`, { method: 'POST', headers, body });
    return res.status === 202 && ((await res.json()) as { status: string }).status === 'completed';
  });
  const simulateRow = await loop(seconds, connections, async () => {
    const res = await fetch(`${url}/api/execute/transfer`, { method: 'POST', headers, body: simulateBody });
    await res.arrayBuffer();
    return res.status === 200;
  });

  console.log(`\nDirect execution on a local anvil (${seconds}s per row, ${connections} concurrent callers, one sending wallet)\n`);
  console.log(['| path | transfers/s | p50 ms | p99 ms | vs viem direct | failures |', '|---|---:|---:|---:|---:|---:|'].join('\n'));
  for (const [name, row] of [['viem sendTransaction + receipt (baseline)', viemRow], ['POST /api/execute/transfer (202 completed)', gatewayRow], ['POST /api/execute/transfer simulate:true', simulateRow]] as const) {
    console.log(`| ${name} | ${row.perSecond.toFixed(1)} | ${row.p50} | ${row.p99} | ${(row.perSecond / viemRow.perSecond).toFixed(2)}x | ${row.failures} |`);
  }

  await gateway.close();
  await node.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
