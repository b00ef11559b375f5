import { sql, type RawBuilder } from 'kysely';
import { z } from 'zod';
import type { ChainCatalog } from '../chains/catalog.ts';
import type { Store } from '../store/db.ts';
import { bucketStarts, type Window } from './range.ts';
import { DIRECT_FAILED, DIRECT_SUCCESS, WORKFLOW_FAILED, WORKFLOW_SUCCESS } from './statuses.ts';

/**
 * Summary, time series and networks of one organization over a window:
 * aggregates over workflow executions plus direct executions, each read
 * from its analytics index (migration 016) without touching table rows.
 *
 * SQL notes (SQLite, the embedded store): times are ISO text, so durations
 * use julianday() and buckets strftime('%s'). Wei amounts are decimal text
 * that can outgrow a 64-bit integer when summed, so each is summed as two
 * integer halves (digits above and below 1e9) and joined exactly in BigInt.
 */

export const summarySchema = z.object({
  totalRuns: z.number().int(),
  successfulRuns: z.number().int(),
  failedRuns: z.number().int(),
  successRate: z.number().describe('0-100'),
  totalGasUsedWei: z.string(),
  avgExecutionTimeMs: z.number(),
});
export type Summary = z.output<typeof summarySchema>;

export const timeSeriesSchema = z.object({
  buckets: z.array(z.object({ timestamp: z.string(), runCount: z.number().int(), successCount: z.number().int(), failedCount: z.number().int() })),
});
export const networksSchema = z.object({
  networks: z.array(z.object({ network: z.string(), runCount: z.number().int(), gasUsedWei: z.string() })),
});

const inList = (values: readonly string[]) =>
  sql.join(
    values.map((v) => sql.lit(v)),
    sql`, `,
  );
const countWhere = (column: string, values: readonly string[]) => sql<number>`coalesce(sum(case when ${sql.ref(column)} in (${inList(values)}) then 1 else 0 end), 0)`;
const weiHigh = (expr: RawBuilder<unknown>) => sql<number>`coalesce(sum(cast(substr(${expr}, 1, length(${expr}) - 9) as integer)), 0)`;
const weiLow = (expr: RawBuilder<unknown>) => sql<number>`coalesce(sum(cast(substr(${expr}, max(length(${expr}) - 8, 1)) as integer)), 0)`;
const joinWei = (high: number | bigint, low: number | bigint) => (BigInt(high) * 1_000_000_000n + BigInt(low)).toString();
const millisBetween = (from: string, to: string) => sql<number>`(julianday(${sql.ref(to)}) - julianday(${sql.ref(from)})) * 86400000.0`;

interface Totals {
  total: number;
  ok: number;
  failed: number;
  durationSum: number;
  durationCount: number;
  gasHigh: number;
  gasLow: number;
}

async function workflowTotals(store: Store, organizationId: string, window: Window): Promise<Totals> {
  const timed = sql`started_at is not null and completed_at is not null`;
  return store
    .selectFrom('workflow_executions')
    .where('organization_id', '=', organizationId)
    .where('created_at', '>=', window.since)
    .where('created_at', '<', window.until)
    .select([
      sql<number>`count(*)`.as('total'),
      countWhere('status', WORKFLOW_SUCCESS).as('ok'),
      countWhere('status', WORKFLOW_FAILED).as('failed'),
      sql<number>`coalesce(sum(case when ${timed} then ${millisBetween('started_at', 'completed_at')} end), 0)`.as('durationSum'),
      sql<number>`coalesce(sum(case when ${timed} then 1 else 0 end), 0)`.as('durationCount'),
      weiHigh(sql.ref('gas_used_wei')).as('gasHigh'),
      weiLow(sql.ref('gas_used_wei')).as('gasLow'),
    ])
    .executeTakeFirstOrThrow();
}

async function directTotals(store: Store, organizationId: string, window: Window): Promise<Totals> {
  return store
    .selectFrom('direct_executions')
    .where('organization_id', '=', organizationId)
    .where('created_at', '>=', window.since)
    .where('created_at', '<', window.until)
    .select([
      sql<number>`count(*)`.as('total'),
      countWhere('status', DIRECT_SUCCESS).as('ok'),
      countWhere('status', DIRECT_FAILED).as('failed'),
      sql<number>`coalesce(sum(case when completed_at is not null then ${millisBetween('created_at', 'completed_at')} end), 0)`.as('durationSum'),
      sql<number>`coalesce(sum(case when completed_at is not null then 1 else 0 end), 0)`.as('durationCount'),
      weiHigh(sql.ref('gas_used_wei')).as('gasHigh'),
      weiLow(sql.ref('gas_used_wei')).as('gasLow'),
    ])
    .executeTakeFirstOrThrow();
}

/** SPEC summary: counts of both sources together; success rate over all runs in the window; mean duration of finished runs. */
export async function summary(store: Store, organizationId: string, window: Window): Promise<Summary> {
  const [w, d] = await Promise.all([workflowTotals(store, organizationId, window), directTotals(store, organizationId, window)]);
  const total = w.total + d.total;
  const ok = w.ok + d.ok;
  const timed = w.durationCount + d.durationCount;
  return {
    totalRuns: total,
    successfulRuns: ok,
    failedRuns: w.failed + d.failed,
    successRate: total === 0 ? 0 : Math.round((ok / total) * 10_000) / 100,
    totalGasUsedWei: joinWei(BigInt(w.gasHigh) + BigInt(d.gasHigh), BigInt(w.gasLow) + BigInt(d.gasLow)),
    avgExecutionTimeMs: timed === 0 ? 0 : Math.round((w.durationSum + d.durationSum) / timed),
  };
}

interface BucketRow {
  bucket: number;
  runs: number;
  ok: number;
  failed: number;
}

/** Runs per bucket of both sources; every bucket of the window is present (zeros where nothing ran), oldest first. */
export async function timeSeries(store: Store, organizationId: string, window: Window): Promise<z.output<typeof timeSeriesSchema>> {
  const seconds = window.bucketMs / 1000;
  const bucket = sql<number>`cast(strftime('%s', created_at) as integer) / ${sql.lit(seconds)}`;
  const [w, d] = await Promise.all([
    store
      .selectFrom('workflow_executions')
      .where('organization_id', '=', organizationId)
      .where('created_at', '>=', window.since)
      .where('created_at', '<', window.until)
      .select([bucket.as('bucket'), sql<number>`count(*)`.as('runs'), countWhere('status', WORKFLOW_SUCCESS).as('ok'), countWhere('status', WORKFLOW_FAILED).as('failed')])
      .groupBy('bucket')
      .execute() as Promise<BucketRow[]>,
    store
      .selectFrom('direct_executions')
      .where('organization_id', '=', organizationId)
      .where('created_at', '>=', window.since)
      .where('created_at', '<', window.until)
      .select([bucket.as('bucket'), sql<number>`count(*)`.as('runs'), countWhere('status', DIRECT_SUCCESS).as('ok'), countWhere('status', DIRECT_FAILED).as('failed')])
      .groupBy('bucket')
      .execute() as Promise<BucketRow[]>,
  ]);
  const byStart = new Map<number, { runCount: number; successCount: number; failedCount: number }>();
  for (const row of [...w, ...d]) {
    const start = row.bucket * window.bucketMs;
    const into = byStart.get(start) ?? { runCount: 0, successCount: 0, failedCount: 0 };
    into.runCount += row.runs;
    into.successCount += row.ok;
    into.failedCount += row.failed;
    byStart.set(start, into);
  }
  return {
    buckets: bucketStarts(window).map((start) => ({
      timestamp: new Date(start).toISOString(),
      ...(byStart.get(start) ?? { runCount: 0, successCount: 0, failedCount: 0 }),
    })),
  };
}

interface NetworkRow {
  chainId: number | null;
  runs: number;
  gasHigh: number;
  gasLow: number;
}

/**
 * Runs and gas per chain: direct executions by their chain, workflow runs by
 * the chains of their transactions (a run with transactions on two chains
 * counts once on each). Most gas first. A transaction's gas in wei is on
 * its entry for runs verified since analytics exists; older entries count
 * as runs without gas.
 */
export async function networks(store: Store, chains: ChainCatalog, organizationId: string, window: Window): Promise<z.output<typeof networksSchema>> {
  const txGas = sql`json_extract(tx.value, '$.gasUsedWei')`;
  const [w, d] = await Promise.all([
    sql<NetworkRow>`
      select json_extract(tx.value, '$.chainId') as "chainId", count(distinct e.id) as runs,
             ${weiHigh(txGas)} as "gasHigh", ${weiLow(txGas)} as "gasLow"
      from workflow_executions e, json_each(e.transaction_hashes) tx
      where e.organization_id = ${organizationId} and e.created_at >= ${window.since} and e.created_at < ${window.until}
        and e.transaction_hashes <> '[]'
      group by 1`.execute(store),
    store
      .selectFrom('direct_executions')
      .where('organization_id', '=', organizationId)
      .where('created_at', '>=', window.since)
      .where('created_at', '<', window.until)
      .select([
        'chain_id as chainId',
        sql<number>`count(*)`.as('runs'),
        weiHigh(sql.ref('gas_used_wei')).as('gasHigh'),
        weiLow(sql.ref('gas_used_wei')).as('gasLow'),
      ])
      .groupBy('chain_id')
      .execute(),
  ]);
  const byChain = new Map<number, { runCount: number; gas: bigint }>();
  for (const row of [...w.rows, ...d]) {
    if (row.chainId === null || row.chainId === undefined) continue;
    const chainId = Number(row.chainId);
    const into = byChain.get(chainId) ?? { runCount: 0, gas: 0n };
    into.runCount += row.runs;
    into.gas += BigInt(joinWei(row.gasHigh, row.gasLow));
    byChain.set(chainId, into);
  }
  return {
    networks: [...byChain.entries()]
      .sort(([, a], [, b]) => (b.gas > a.gas ? 1 : b.gas < a.gas ? -1 : b.runCount - a.runCount))
      .map(([chainId, { runCount, gas }]) => ({ network: chains.get(chainId)?.id ?? String(chainId), runCount, gasUsedWei: gas.toString() })),
  };
}
