/**
 * `npm run bench`: requests/s and p50/p99 latency for the gateway's hot read
 * paths against a bare express JSON route served by the same process (the
 * baseline), each reported as a ratio to that baseline.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import express from 'express';
import { loadConfig } from '../src/config.ts';
import { createGateway } from '../src/gateway.ts';

const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

interface Row {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function measure(name: string, options: autocannon.Options): Promise<Row> {
  // Warm-up so JIT and caches settle before the measured run.
  await autocannon({ ...options, duration: 1, connections: CONNECTIONS });
  const result = await autocannon({ ...options, duration: DURATION_SECONDS, connections: CONNECTIONS });
  return { name, requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors };
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-bench-'));
  const gateway = await createGateway(
    loadConfig({ PORT: '0', FLOWGATE_DATA_DIR: dataDir, FLOWGATE_DEVNET: 'off', FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_BASE_URL: 'http://127.0.0.1:3000' }),
  );
  const gatewayUrl = await gateway.listen();

  // Baseline: the smallest express JSON route, same process, same machine.
  const bare = express();
  const payload = { ok: true, chains: [{ chainId: 1, name: 'Ethereum' }] };
  bare.get('/bare', (_req, res) => res.json(payload));
  const bareServer = http.createServer(bare);
  await new Promise<void>((resolve) => bareServer.listen(0, '127.0.0.1', resolve));
  const bareUrl = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}`;

  const mcpCall = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_chains', arguments: {} } });
  const rows = [
    await measure('bare express JSON route (baseline)', { url: `${bareUrl}/bare` }),
    await measure('GET /api/chains', { url: `${gatewayUrl}/api/chains` }),
    await measure('MCP tools/call list_chains', {
      url: `${gatewayUrl}/mcp`,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: mcpCall,
    }),
  ];

  const baseline = rows[0]!;
  console.log(`\nFlowgate benchmark: ${DURATION_SECONDS}s per row, ${CONNECTIONS} connections, node ${process.version}, ${os.cpus().length} cores\n`);
  console.log(['| path | req/s | p50 ms | p99 ms | req/s vs baseline | p50 vs baseline | errors |', '|---|---:|---:|---:|---:|---:|---:|'].join('\n'));
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${row.requestsPerSecond.toFixed(0)} | ${row.p50} | ${row.p99} | ${(row.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x | ${(row.p50 / Math.max(baseline.p50, 1)).toFixed(2)}x | ${row.non2xx} |`,
    );
  }

  bareServer.close();
  await gateway.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

await main();
