/**
 * Direct execution on a local anvil: transfers/s through the gateway
 * (validation, guards, sign, store hash, broadcast, verify receipt) against
 * the same transfers sent straight with viem to the same node (the baseline),
 * at the bench's concurrency and at 16 in flight (issue 18), and p50/p99
 * latency of `simulate: true`. The gateway's callers are the external load
 * generator (bench/load-process.ts, its own process, as a real client is), so
 * the gateway's event loop and CPU time hold only the gateway's work.
 */
import { pathToFileURL } from 'node:url';
import { parseEther } from 'viem';
import { viemTransfers, withDevnetGateway, type Sample } from './devnet-bench.ts';
import { externalLoad, type LoadSpec } from './external-load.ts';

const IN_FLIGHT = 16;

/** A gateway (and its devnet) for one concurrency level, and the two kinds of row measured on it. */
async function onFreshDevnet<T>(seconds: number, work: (rows: { viem: (callers: number) => Promise<Sample>; gateway: GatewayLoop }) => Promise<T>): Promise<T> {
  return withDevnetGateway({ EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('1000').toString() }, async ({ node, gateway, url }) => {
    const headers = { authorization: `Bearer ${gateway.firstStart!.ownerKey}`, 'content-type': 'application/json' };
    // Baseline: the same transfer with viem alone (sign, send, wait for the receipt), one sender, same concurrency.
    const viem = (callers: number) => viemTransfers(node.url, 5, TO)(seconds, callers);
    const gatewayLoop: GatewayLoop = async (callers, simulate) => {
      const body = JSON.stringify({ chainId: 31337, recipientAddress: TO.toLowerCase(), amount: '0.000001', ...(simulate ? { simulate: true } : {}) });
      const request: LoadSpec['request'] = simulate
        ? { method: 'POST', path: '/api/execute/transfer', headers, body }
        : { method: 'POST', path: '/api/execute/transfer', headers, body, expect: { field: 'status', equals: 'completed' } };
      const load = await externalLoad({ url, connections: callers, warmupSeconds: 1, durationSeconds: seconds, request });
      return { perSecond: load.samplesPerSecond, p50: load.p50, p99: load.p99, failures: load.failures, cpuMs: load.serverCpuMsPerSample };
    };
    return work({ viem, gateway: gatewayLoop });
  });
}

type GatewayLoop = (callers: number, simulate?: boolean) => Promise<Sample & { cpuMs: number }>;
const TO = '0x000000000000000000000000000000000000bEEF';

export async function benchDirectExecution(seconds: number, connections: number): Promise<void> {
  // anvil slows down as its chain grows (Prague's block-hash history, see src/chains/anvil.ts; one block per
  // transaction here: in one run, viem's own rate fell from 178 to 121/s over three rows), so each concurrency
  // level gets a fresh devnet, and its gateway row is measured between two viem rows and compared with their mean.
  const rows: [string, Sample & { cpuMs?: number }, Sample][] = [];
  for (const callers of [...new Set([connections, IN_FLIGHT])]) {
    await onFreshDevnet(seconds, async ({ viem, gateway }) => {
      const before = await viem(callers);
      const gatewayRow = await gateway(callers);
      const after = await viem(callers);
      const anchor: Sample = {
        perSecond: (before.perSecond + after.perSecond) / 2,
        p50: (before.p50 + after.p50) / 2,
        p99: (before.p99 + after.p99) / 2,
        failures: before.failures + after.failures,
      };
      rows.push([`viem sendTransaction + receipt (baseline: mean of the rows before and after), ${callers} in flight`, anchor, anchor]);
      rows.push([`POST /api/execute/transfer (202 completed), ${callers} in flight`, gatewayRow, anchor]);
    });
  }
  const simulateRow = await onFreshDevnet(seconds, ({ gateway }) => gateway(connections, true));
  rows.push([`POST /api/execute/transfer simulate:true, ${connections} in flight`, simulateRow, rows[0]![1]]);

  console.log(
    `\nDirect execution on a local anvil (${seconds}s per row, one sending wallet, a fresh devnet per concurrency; each row against viem at the same concurrency)\n`,
  );
  console.log(
    [
      '| path | transfers/s | p50 ms | p99 ms | vs viem direct | p99 vs viem p99 | gateway CPU ms/transfer | failures |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    ].join('\n'),
  );
  for (const [name, row, viemRow] of rows) {
    console.log(
      `| ${name} | ${row.perSecond.toFixed(1)} | ${Math.round(row.p50)} | ${Math.round(row.p99)} | ${(row.perSecond / viemRow.perSecond).toFixed(2)}x | ${(row.p99 / Math.max(viemRow.p99, 0.1)).toFixed(2)}x | ${row.cpuMs === undefined ? '' : row.cpuMs.toFixed(2)} | ${row.failures} |`,
    );
  }
}

// `node --import tsx bench/direct-execution.ts` runs this table alone.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchDirectExecution(Number(process.env.BENCH_DURATION ?? 8), Number(process.env.BENCH_CONNECTIONS ?? 10));
  process.exit(0);
}
