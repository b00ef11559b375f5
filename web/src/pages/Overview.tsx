import { useState } from 'preact/hooks';
import { api, query, type Bucket, type NetworkRow, type Summary } from '../api.ts';
import { ErrorNote, PageHeading, useLoad } from '../components.tsx';
import { RunsChart } from '../chart.tsx';
import { count, duration, gas } from '../format.ts';
import { LiveBadge, useSummaryStream } from '../live.tsx';

export const RANGES = [
  { value: '24h', label: 'Last 24 hours' },
  { value: '7d', label: 'Last 7 days' },
  { value: '30d', label: 'Last 30 days' },
  { value: '90d', label: 'Last 90 days' },
];

export function RangeSelect({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  return (
    <label class="inline">
      Range{' '}
      <select value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        {RANGES.map((r) => (
          <option key={r.value} value={r.value}>
            {r.label}
          </option>
        ))}
      </select>
    </label>
  );
}

function Cards({ summary }: { summary: Summary }) {
  const cards = [
    ['Total runs', count(summary.totalRuns)],
    ['Succeeded', count(summary.successfulRuns)],
    ['Failed', count(summary.failedRuns)],
    ['Success rate', `${summary.successRate.toFixed(1)} %`],
    ['Gas used', gas(summary.totalGasUsedWei)],
    ['Average duration', duration(summary.avgExecutionTimeMs)],
  ];
  return (
    <dl class="cards" aria-label="Summary">
      {cards.map(([name, value]) => (
        <div class="card" key={name}>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function Networks({ networks }: { networks: NetworkRow[] }) {
  const sorted = [...networks].sort((a, b) =>
    BigInt(b.gasUsedWei) > BigInt(a.gasUsedWei) ? 1 : BigInt(b.gasUsedWei) < BigInt(a.gasUsedWei) ? -1 : b.runCount - a.runCount,
  );
  const top = sorted.reduce((max, n) => (BigInt(n.gasUsedWei) > max ? BigInt(n.gasUsedWei) : max), 0n);
  if (sorted.length === 0) return <p>No runs on any network in this range.</p>;
  return (
    <table>
      <caption>Networks by gas used</caption>
      <thead>
        <tr>
          <th scope="col">Network</th>
          <th scope="col">Runs</th>
          <th scope="col">Gas used</th>
          <th scope="col" aria-hidden="true" class="bar-col"></th>
        </tr>
      </thead>
      <tbody>
        {sorted.map((n) => (
          <tr key={n.network}>
            <th scope="row">{n.network}</th>
            <td>{count(n.runCount)}</td>
            <td>{gas(n.gasUsedWei)}</td>
            <td aria-hidden="true" class="bar-col">
              <span class="bar" style={{ width: `${top > 0n ? Number((BigInt(n.gasUsedWei) * 100n) / top) : 0}%` }} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Overview() {
  const [range, setRange] = useState('24h');
  const [live, setLive] = useState<Summary | undefined>();
  const data = useLoad(async () => {
    setLive(undefined);
    const q = query({ range });
    const [summary, series, networks] = await Promise.all([
      api<Summary>(`/api/analytics/summary${q}`),
      api<{ buckets: Bucket[] }>(`/api/analytics/time-series${q}`),
      api<{ networks: NetworkRow[] }>(`/api/analytics/networks${q}`),
    ]);
    return { summary, buckets: series.buckets, networks: networks.networks };
  }, [range]);
  // A changed summary also means new chart points and network totals: fetch those again.
  const stream = useSummaryStream(range, (summary) => {
    if (data.data && JSON.stringify(summary) !== JSON.stringify(live ?? data.data.summary)) {
      setLive(summary);
      void data.reload();
    }
  });
  const summary = live ?? data.data?.summary;
  return (
    <section aria-busy={data.loading}>
      <div class="page-head">
        <PageHeading>Overview</PageHeading>
        <RangeSelect value={range} onChange={setRange} />
        <LiveBadge state={stream} />
      </div>
      <ErrorNote error={data.error} />
      {summary && <Cards summary={summary} />}
      {data.data && (
        <>
          <h2>Runs by status</h2>
          <RunsChart buckets={data.data.buckets} />
          <h2>Networks</h2>
          <Networks networks={data.data.networks} />
        </>
      )}
    </section>
  );
}
