import { sql } from 'kysely';
import { z } from 'zod';
import type { ChainCatalog } from '../chains/catalog.ts';
import type { Store } from '../store/db.ts';
import { dialectOf } from '../store/dialect.ts';
import { bucketStarts, type Window } from './range.ts';
import { DIRECT_FAILED, DIRECT_SUCCESS, WORKFLOW_FAILED, WORKFLOW_SUCCESS } from './statuses.ts';

/**
 * Summary, time series and networks of one organization over a window, for
 * workflow executions and direct executions together. Whole hours come from
 * the hourly rollups the store keeps (migration 016), so a 90-day range
 * reads about 2,000 small rows however many runs it holds; the partial
 * hours at the window's two edges are counted from the runs themselves
 * (through the (organization_id, created_at) indexes). Both use the same
 * status rules (./statuses.ts) and gas arithmetic.
 *
 * SQL notes: times are ISO text and wei amounts decimal text; the SQLite and
 * PostgreSQL spellings of their arithmetic are in src/store/dialect.ts. Wei
 * sums can outgrow a 64-bit integer, so each is summed as two integer halves
 * (digits above and below 1e9) and joined exactly in BigInt.
 */

const HOUR = 3_600_000;

/** A part of a window: ISO bounds, since inclusive, until exclusive. */
interface Slice {
  since: string;
  until: string;
}

/** The window as whole hours [first, end) (rollups) and the partial hours at its edges (raw runs). */
function split(window: Window): { hours?: { first: number; end: number }; edges: Slice[] } {
  const first = Math.ceil(window.sinceMs / HOUR);
  const end = Math.floor(window.untilMs / HOUR);
  if (first >= end) return { edges: [{ since: window.since, until: window.until }] };
  const edges: Slice[] = [];
  if (first * HOUR > window.sinceMs) edges.push({ since: window.since, until: new Date(first * HOUR).toISOString() });
  if (end * HOUR < window.untilMs) edges.push({ since: new Date(end * HOUR).toISOString(), until: window.until });
  return { hours: { first, end }, edges };
}

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
const countWhere = (column: string, values: readonly string[]) =>
  sql<number>`coalesce(sum(case when ${sql.ref(column)} in (${inList(values)}) then 1 else 0 end), 0)`;
const weiHigh = (store: Store, expr: string) => sql<number>`coalesce(sum(${sql.raw(dialectOf(store).weiHigh(expr))}), 0)`;
const weiLow = (store: Store, expr: string) => sql<number>`coalesce(sum(${sql.raw(dialectOf(store).weiLow(expr))}), 0)`;
const joinWei = (high: number | bigint, low: number | bigint) => (BigInt(high) * 1_000_000_000n + BigInt(low)).toString();
const millisBetween = (store: Store, from: string, to: string) => sql<number>`${sql.raw(dialectOf(store).millisBetween(from, to))}`;

interface Totals {
  total: number;
  ok: number;
  failed: number;
  durationSum: number;
  durationCount: number;
  gasHigh: number;
  gasLow: number;
}

async function workflowTotals(store: Store, organizationId: string, window: Slice): Promise<Totals> {
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
      sql<number>`coalesce(sum(case when ${timed} then ${millisBetween(store, 'started_at', 'completed_at')} end), 0)`.as('durationSum'),
      sql<number>`coalesce(sum(case when ${timed} then 1 else 0 end), 0)`.as('durationCount'),
      weiHigh(store, 'gas_used_wei').as('gasHigh'),
      weiLow(store, 'gas_used_wei').as('gasLow'),
    ])
    .executeTakeFirstOrThrow();
}

async function directTotals(store: Store, organizationId: string, window: Slice): Promise<Totals> {
  return store
    .selectFrom('direct_executions')
    .where('organization_id', '=', organizationId)
    .where('created_at', '>=', window.since)
    .where('created_at', '<', window.until)
    .select([
      sql<number>`count(*)`.as('total'),
      countWhere('status', DIRECT_SUCCESS).as('ok'),
      countWhere('status', DIRECT_FAILED).as('failed'),
      sql<number>`coalesce(sum(case when completed_at is not null then ${millisBetween(store, 'created_at', 'completed_at')} end), 0)`.as('durationSum'),
      sql<number>`coalesce(sum(case when completed_at is not null then 1 else 0 end), 0)`.as('durationCount'),
      weiHigh(store, 'gas_used_wei').as('gasHigh'),
      weiLow(store, 'gas_used_wei').as('gasLow'),
    ])
    .executeTakeFirstOrThrow();
}

async function rollupTotals(store: Store, organizationId: string, hours: { first: number; end: number }): Promise<Totals> {
  return store
    .selectFrom('run_rollups')
    .where('organization_id', '=', organizationId)
    .where('hour', '>=', hours.first)
    .where('hour', '<', hours.end)
    .select([
      sql<number>`coalesce(sum(runs), 0)`.as('total'),
      sql<number>`coalesce(sum(ok), 0)`.as('ok'),
      sql<number>`coalesce(sum(failed), 0)`.as('failed'),
      sql<number>`coalesce(sum(duration_sum), 0)`.as('durationSum'),
      sql<number>`coalesce(sum(duration_count), 0)`.as('durationCount'),
      sql<number>`coalesce(sum(gas_high), 0)`.as('gasHigh'),
      sql<number>`coalesce(sum(gas_low), 0)`.as('gasLow'),
    ])
    .executeTakeFirstOrThrow();
}

/** SPEC summary: counts of both sources together; success rate over all runs in the window; mean duration of finished runs. */
export async function summary(store: Store, organizationId: string, window: Window): Promise<Summary> {
  const { hours, edges } = split(window);
  const parts = await Promise.all([
    ...(hours ? [rollupTotals(store, organizationId, hours)] : []),
    ...edges.flatMap((edge) => [workflowTotals(store, organizationId, edge), directTotals(store, organizationId, edge)]),
  ]);
  const add = (field: keyof Totals) => parts.reduce((n, p) => n + Number(p[field]), 0);
  const addBig = (field: 'gasHigh' | 'gasLow') => parts.reduce((n, p) => n + BigInt(p[field]), 0n);
  const total = add('total');
  const ok = add('ok');
  const timed = add('durationCount');
  return {
    totalRuns: total,
    successfulRuns: ok,
    failedRuns: add('failed'),
    successRate: total === 0 ? 0 : Math.round((ok / total) * 10_000) / 100,
    totalGasUsedWei: joinWei(addBig('gasHigh'), addBig('gasLow')),
    avgExecutionTimeMs: timed === 0 ? 0 : Math.round(add('durationSum') / timed),
  };
}

interface BucketRow {
  bucket: number;
  runs: number;
  ok: number;
  failed: number;
}

/** The two kinds of run and what counts as success and failure in each (their status vocabularies differ). */
const RUN_SOURCES = [
  { table: 'workflow_executions', ok: WORKFLOW_SUCCESS, failed: WORKFLOW_FAILED },
  { table: 'direct_executions', ok: DIRECT_SUCCESS, failed: DIRECT_FAILED },
] as const;

/** Runs per bucket of both sources in one slice, from the runs themselves; `bucket` counts buckets since the epoch. */
function rawBuckets(store: Store, organizationId: string, slice: Slice, bucketMs: number): Promise<BucketRow[]>[] {
  const bucket = sql<number>`${sql.raw(dialectOf(store).epochSeconds('created_at'))} / ${sql.lit(bucketMs / 1000)}`;
  return RUN_SOURCES.map(
    (source) =>
      store
        // Both tables have the columns read here; the cast only picks one for Kysely's types.
        .selectFrom(source.table as 'workflow_executions')
        .where('organization_id', '=', organizationId)
        .where('created_at', '>=', slice.since)
        .where('created_at', '<', slice.until)
        .select([
          bucket.as('bucket'),
          sql<number>`count(*)`.as('runs'),
          countWhere('status', source.ok).as('ok'),
          countWhere('status', source.failed).as('failed'),
        ])
        .groupBy('bucket')
        .execute() as Promise<BucketRow[]>,
  );
}

/** Runs per bucket of both sources; every bucket of the window is present (zeros where nothing ran), oldest first. */
export async function timeSeries(store: Store, organizationId: string, window: Window): Promise<z.output<typeof timeSeriesSchema>> {
  const { hours, edges } = split(window);
  const perHour = hours ? rollupBuckets(store, organizationId, hours, window.bucketMs) : Promise.resolve([]);
  const raw = await Promise.all(edges.flatMap((edge) => rawBuckets(store, organizationId, edge, window.bucketMs)));
  const byStart = new Map<number, { runCount: number; successCount: number; failedCount: number }>();
  for (const row of [...(await perHour), ...raw.flat()]) {
    const start = row.bucket * window.bucketMs;
    const into = byStart.get(start) ?? { runCount: 0, successCount: 0, failedCount: 0 };
    into.runCount += Number(row.runs);
    into.successCount += Number(row.ok);
    into.failedCount += Number(row.failed);
    byStart.set(start, into);
  }
  return {
    buckets: bucketStarts(window).map((start) => ({
      timestamp: new Date(start).toISOString(),
      ...(byStart.get(start) ?? { runCount: 0, successCount: 0, failedCount: 0 }),
    })),
  };
}

/** Rollup hours grouped into the window's buckets (a bucket is a whole number of hours). */
const rollupBuckets = (store: Store, organizationId: string, hours: { first: number; end: number }, bucketMs: number) =>
  store
    .selectFrom('run_rollups')
    .where('organization_id', '=', organizationId)
    .where('hour', '>=', hours.first)
    .where('hour', '<', hours.end)
    .select([
      sql<number>`hour / ${sql.lit(bucketMs / HOUR)}`.as('bucket'),
      sql<number>`sum(runs)`.as('runs'),
      sql<number>`sum(ok)`.as('ok'),
      sql<number>`sum(failed)`.as('failed'),
    ])
    .groupBy('bucket')
    .execute() as Promise<BucketRow[]>;

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
  const { hours, edges } = split(window);
  const d = dialectOf(store);
  const txGas = d.jsonField('tx.value', 'gasUsedWei');
  const chain = sql.raw(d.jsonInteger('tx.value', 'chainId'));
  const parts: Promise<NetworkRow[]>[] = [];
  if (hours) {
    parts.push(
      store
        .selectFrom('network_rollups')
        .where('organization_id', '=', organizationId)
        .where('hour', '>=', hours.first)
        .where('hour', '<', hours.end)
        .select(['chain_id as chainId', sql<number>`sum(runs)`.as('runs'), sql<number>`sum(gas_high)`.as('gasHigh'), sql<number>`sum(gas_low)`.as('gasLow')])
        .groupBy('chain_id')
        .execute(),
    );
  }
  for (const edge of edges) {
    parts.push(
      sql<NetworkRow>`
        select ${chain} as "chainId", count(distinct e.id) as runs,
               ${weiHigh(store, txGas)} as "gasHigh", ${weiLow(store, txGas)} as "gasLow"
        from workflow_executions e, ${sql.raw(d.jsonArrayRows('e.transaction_hashes', 'tx'))}
        where e.organization_id = ${organizationId} and e.created_at >= ${edge.since} and e.created_at < ${edge.until}
          and ${chain} is not null
        group by 1`
        .execute(store)
        .then((r) => r.rows),
      store
        .selectFrom('direct_executions')
        .where('organization_id', '=', organizationId)
        .where('created_at', '>=', edge.since)
        .where('created_at', '<', edge.until)
        .select([
          'chain_id as chainId',
          sql<number>`count(*)`.as('runs'),
          weiHigh(store, 'gas_used_wei').as('gasHigh'),
          weiLow(store, 'gas_used_wei').as('gasLow'),
        ])
        .groupBy('chain_id')
        .execute(),
    );
  }
  const byChain = new Map<number, { runCount: number; gas: bigint }>();
  for (const row of (await Promise.all(parts)).flat()) {
    if (row.chainId === null || row.chainId === undefined) continue;
    const chainId = Number(row.chainId);
    const into = byChain.get(chainId) ?? { runCount: 0, gas: 0n };
    into.runCount += Number(row.runs);
    into.gas += BigInt(joinWei(row.gasHigh, row.gasLow));
    byChain.set(chainId, into);
  }
  return {
    networks: [...byChain.entries()]
      .filter(([, n]) => n.runCount > 0)
      .sort(([, a], [, b]) => (b.gas > a.gas ? 1 : b.gas < a.gas ? -1 : b.runCount - a.runCount))
      .map(([chainId, { runCount, gas }]) => ({ network: chains.get(chainId)?.id ?? String(chainId), runCount, gasUsedWei: gas.toString() })),
  };
}
