/**
 * Pay-per-call overhead on a local anvil devnet: `POST /api/mcp/workflows/{slug}/call`
 * for the free `helloworld` (the baseline) against the paid `microtip` ($0.01,
 * the same kind of work: one `code/run-code` step, no chain read), paid with
 * @x402/fetch and with mppx/client. A paid sample is the whole client-visible
 * call: the unpaid request and its 402, signing, and the retry the gateway
 * verifies, settles on chain (through the in-process facilitator) and runs.
 * Every paid call carries a fresh payment (a reused one would be answered as a
 * replay without settling), and each concurrent loop pays from its own account.
 * The callers run in their own process (bench/paid-callers.ts), as paying
 * agents do: their signing never shares the gateway's event loop or CPU.
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Hex } from 'viem';
import type { CallerKind, CallerResult, CallerSpec, ProbeResult } from './paid-callers.ts';
import { withDevnetGateway } from './devnet-bench.ts';
import { median, processCpuMs } from './stats.ts';

const FREE_SLUG = 'helloworld';
const PAID_SLUG = 'microtip';

/**
 * Runs the callers (bench/paid-callers.ts) in their own process; the gateway's CPU per call is measured here
 * over the timed part, and anvil's from /proc, so each row shows what every process on the machine spent per call.
 */
function callersProcess<R>(spec: CallerSpec): Promise<R & { gatewayCpuMs?: number; anvilCpuMs?: number }> {
  const child = fork(new URL('./paid-callers.ts', import.meta.url).pathname, [JSON.stringify(spec)], { execArgv: ['--import', 'tsx'] });
  let cpuAtStart = process.cpuUsage();
  let anvilAtStart = NaN;
  return new Promise((resolve, reject) => {
    child.on('message', (message: { ready: true } | (R & { perSecond?: number })) => {
      if ('ready' in message) {
        cpuAtStart = process.cpuUsage();
        anvilAtStart = spec.anvilPid ? processCpuMs(spec.anvilPid) : NaN;
        return;
      }
      const cpu = process.cpuUsage(cpuAtStart);
      const calls = (message.perSecond ?? 0) * spec.seconds;
      const anvilMs = spec.anvilPid ? processCpuMs(spec.anvilPid) - anvilAtStart : NaN;
      resolve({
        ...message,
        ...(calls > 0 ? { gatewayCpuMs: (cpu.user + cpu.system) / 1000 / calls, ...(Number.isFinite(anvilMs) ? { anvilCpuMs: anvilMs / calls } : {}) } : {}),
      });
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the ${spec.kind} callers exited with code ${code}`));
    });
  });
}

/** Rounds of the four measured rows (the concurrency probe runs once). */
const ROUNDS = Math.max(1, Number(process.env.BENCH_PAID_ROUNDS ?? 3));
/**
 * Untimed rounds first (BENCH_PAID_WARMUP, default 1), printed but not counted. The gateway runs in this
 * process, so its paid path is compiled once for all rounds, and V8 takes tens of seconds to finish: in a
 * trace of x402 calls at 10 callers, its compiler threads used 2.5 s of CPU in the first second, about
 * 0.3 s a second over the next ten and under 0.1 s after 25, 2-3 ms of CPU per call while it lasts.
 * Without a warm-up the first round paid all of it and the median round still a share.
 */
const WARMUP_ROUNDS = Math.max(0, Number(process.env.BENCH_PAID_WARMUP ?? 1));

/** One row of one round, with the gateway's CPU per call over its timed part. */
type MeasuredRow = CallerResult & { gatewayCpuMs?: number; anvilCpuMs?: number };

/** Each figure the median of its rounds; failures summed; the rounds' p50s kept for the table. */
function medianRow(rows: MeasuredRow[]) {
  const of = (pick: (row: (typeof rows)[number]) => number) => median(rows.map(pick));
  return {
    perSecond: of((r) => r.perSecond),
    p50: of((r) => r.p50),
    p99: of((r) => r.p99),
    gatewayCpuMs: of((r) => r.gatewayCpuMs ?? 0),
    callersCpuMs: of((r) => r.callersCpuMs),
    anvilCpuMs: of((r) => r.anvilCpuMs ?? NaN),
    failures: rows.reduce((sum, r) => sum + r.failures, 0),
    lastFailure:
      rows
        .map((r) => r.lastFailure)
        .filter(Boolean)
        .at(-1) ?? '',
    p50s: rows.map((r) => r.p50),
  };
}

type Spec = (kind: CallerKind, count: number, probe?: boolean) => Promise<CallerSpec>;

/**
 * Runs `work` against a gateway on a fresh anvil devnet. anvil's cost per block grows with its chain (Prague's
 * block-hash history, see src/chains/anvil.ts): a lone transaction's receipt took 6 ms in a first round and 11 ms
 * two rounds later; even `eth_blockNumber` cost anvil 40 µs of CPU on a new chain and 80 µs after 2,000 blocks.
 * So every row starts from block 0:
 * when the four rows of a round shared one chain, the MPP row, last, met a chain thousands of blocks
 * longer than the anchor's (its p50 at ten callers was 100-111 ms there, 65-82 ms alone on a new chain).
 */
async function onFreshDevnet<T>(seconds: number, work: (spec: Spec) => Promise<T>): Promise<T> {
  return withDevnetGateway({}, async ({ gateway, url, node }) => {
    const devnet = gateway.services.devnet!;
    const usdc = devnet.usdcAddress as Hex;
    // One payer per concurrent caller and kind, funded well beyond what the run can spend at $0.01 a call.
    const payers = async (count: number): Promise<Hex[]> => {
      const keys = Array.from({ length: count }, () => generatePrivateKey());
      for (const key of keys) await devnet.fund(privateKeyToAccount(key).address, { eth: '1', usdc: '100000' });
      return keys;
    };
    return await work(async (kind, count, probe = false) => ({
      kind,
      url,
      rpcUrl: node.url,
      anvilPid: node.pid,
      usdc,
      keys: await payers(count),
      seconds,
      freeSlug: FREE_SLUG,
      paidSlug: PAID_SLUG,
      probe,
    }));
  });
}

export async function benchPayments(seconds: number, connections: number): Promise<void> {
  // Concurrency probe: `connections` paid calls at once per protocol, from distinct payers; every one must settle
  // (the in-process facilitator's settlements all come from one account: they are pipelined with locally counted nonces).
  const [probeX402, probeMpp] = await onFreshDevnet(seconds, async (spec) => [
    await callersProcess<ProbeResult>(await spec('x402', connections, true)),
    await callersProcess<ProbeResult>(await spec('mpp', connections, true)),
  ]);
  // Measured rows run at `paidConnections` (all callers unless BENCH_PAID_CONNECTIONS says otherwise);
  // the free baseline runs at the same concurrency so the p50 ratio compares like with like.
  const paidConnections = Math.min(connections, Number(process.env.BENCH_PAID_CONNECTIONS ?? connections));
  // The four rows run in turn, ROUNDS times (BENCH_PAID_ROUNDS, default 3), each row on a fresh devnet, and each
  // figure is the median of its rounds: one round's paid minus free moved by several ms from run to run here.
  const rounds: Record<CallerKind, MeasuredRow[]> = { raw: [], free: [], x402: [], mpp: [] };
  const warmup: Record<CallerKind, MeasuredRow[]> = { raw: [], free: [], x402: [], mpp: [] };
  for (let round = -WARMUP_ROUNDS; round < ROUNDS; round++) {
    const into = round < 0 ? warmup : rounds;
    for (const kind of ['raw', 'free', 'x402', 'mpp'] as const) {
      into[kind].push(await onFreshDevnet(seconds, async (spec) => callersProcess<CallerResult>(await spec(kind, paidConnections))));
    }
  }
  const [rawRow, freeRow, x402Row, mppRow] = (['raw', 'free', 'x402', 'mpp'] as const).map((kind) => medianRow(rounds[kind]));

  console.log(
    `\nPay-per-call on a local anvil devnet (${seconds}s per row, ${paidConnections} concurrent caller${paidConnections === 1 ? '' : 's'} per row; ` +
      `one payer account per caller and protocol; ` +
      `free ${FREE_SLUG} vs $0.01 ${PAID_SLUG}, both one code step; a paid sample = 402 + sign + verify + settle on chain + run; ` +
      `medians of ${ROUNDS} round${ROUNDS === 1 ? '' : 's'}, each row on a fresh devnet, after ${WARMUP_ROUNDS} untimed warm-up round${WARMUP_ROUNDS === 1 ? '' : 's'})\n`,
  );
  console.log(
    [
      '| call | calls/s | p50 ms | p99 ms | p50 vs free | gateway CPU ms/call | callers CPU ms/call | anvil CPU ms/call | failures | p50 of each round |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ].join('\n'),
  );
  for (const [name, row] of [
    [`one devnet transaction, raw viem (anchor for paid minus free)`, rawRow],
    [`free: POST /api/mcp/workflows/${FREE_SLUG}/call (baseline)`, freeRow],
    [`paid with x402 (@x402/fetch): ${PAID_SLUG}`, x402Row],
    [`paid with MPP (mppx/client): ${PAID_SLUG}`, mppRow],
  ] as const) {
    console.log(
      `| ${name} | ${row.perSecond.toFixed(1)} | ${row.p50.toFixed(1)} | ${row.p99.toFixed(1)} | ${(row.p50 / Math.max(freeRow.p50, 0.1)).toFixed(2)}x | ${row === rawRow ? '—' : row.gatewayCpuMs.toFixed(2)} | ${row.callersCpuMs.toFixed(2)} | ${row.anvilCpuMs.toFixed(2)} | ${row.failures} | ${row.p50s.map((p) => p.toFixed(1)).join(' · ')} |`,
    );
  }
  // Paired within each round (the rows of one round run minutes apart at most), then the median of the pairs.
  const over = (kind: 'x402' | 'mpp') => {
    const pairs = rounds[kind].map((paid, i) => paid.p50 - rounds.free[i]!.p50);
    return `${median(pairs).toFixed(1)} ms (rounds: ${pairs.map((d) => d.toFixed(1)).join(' · ')})`;
  };
  if (WARMUP_ROUNDS > 0) {
    const each = (kind: CallerKind, f: (r: MeasuredRow) => string) => warmup[kind].map(f).join(' · ');
    console.log(
      `\nWarm-up round${WARMUP_ROUNDS === 1 ? '' : 's'} (not counted), p50 ms: raw ${each('raw', (r) => String(r.p50))}, free ${each('free', (r) => String(r.p50))}, ` +
        `x402 ${each('x402', (r) => String(r.p50))}, MPP ${each('mpp', (r) => String(r.p50))}; ` +
        `gateway CPU ms/call: free ${each('free', (r) => (r.gatewayCpuMs ?? NaN).toFixed(2))}, x402 ${each('x402', (r) => (r.gatewayCpuMs ?? NaN).toFixed(2))}, MPP ${each('mpp', (r) => (r.gatewayCpuMs ?? NaN).toFixed(2))}`,
    );
  }
  console.log(
    `\nPaid minus free at p50: x402 ${over('x402')}, MPP ${over('mpp')}; one devnet transaction: ${rawRow.p50.toFixed(1)} ms (goal: paid minus free ≤ that + 10 ms)`,
  );
  // What the machine allows: callers in a closed loop wait on average callers ÷ calls per second, and the calls per
  // second can be no more than the cores divided by every process's CPU per call (Little's law; the p50 sits near the
  // mean). A call's own CPU is a floor too: its steps follow one another.
  const cores = os.availableParallelism();
  const goal = freeRow.p50 + rawRow.p50 + 10;
  const floor = (cpuMs: number) => Math.max(cpuMs, (paidConnections * cpuMs) / Math.min(cores, paidConnections));
  for (const [name, row] of [
    ['x402', x402Row],
    ['MPP', mppRow],
  ] as const) {
    const others = row.callersCpuMs + row.anvilCpuMs;
    console.log(
      `${name}: every process's CPU per paid call ${(row.gatewayCpuMs + others).toFixed(1)} ms (gateway ${row.gatewayCpuMs.toFixed(1)}, callers ${row.callersCpuMs.toFixed(1)}, anvil ${row.anvilCpuMs.toFixed(1)}); ` +
        `on ${cores} cores ${paidConnections} caller${paidConnections === 1 ? '' : 's'} wait at least ${floor(row.gatewayCpuMs + others).toFixed(1)} ms a call on average, ` +
        `and ${floor(others).toFixed(1)} ms with a gateway that spent nothing, against a goal of ${goal.toFixed(1)} ms (free p50 + one devnet transaction + 10 ms)`,
    );
  }
  const lastFailure =
    [probeX402, probeMpp, x402Row, mppRow]
      .map((r) => r.lastFailure)
      .filter(Boolean)
      .at(-1) ?? '';
  console.log(
    `\nConcurrency probe (${connections} paid calls at once, distinct payers): ${probeX402.refused}/${connections} x402 and ${probeMpp.refused}/${connections} MPP calls refused` +
      (lastFailure ? ` (last refusal: ${lastFailure.replace(/\s+/g, ' ').slice(0, 160)})` : ''),
  );
}

// `node --import tsx bench/payments.ts` runs this table alone.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchPayments(Number(process.env.BENCH_DURATION ?? 8), Number(process.env.BENCH_CONNECTIONS ?? 10));
  // Something (not yet identified) keeps the event loop alive for minutes after the gateway and anvil are closed.
  process.exit(0);
}
