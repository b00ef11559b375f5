import { api, type Chain, type SpendCap } from '../api.ts';
import { ErrorNote, PageHeading, useLoad } from '../components.tsx';
import { count, ether, when } from '../format.ts';

/** A share of a limit: a meter that turns amber at 70 % and red at 90 %, and the figure. */
function Share({ percent, label }: { percent: number; label: string }) {
  return (
    <td>
      <meter min={0} max={100} value={Math.min(100, percent)} low={70} high={90} optimum={0} aria-label={`${label}: ${percent.toFixed(1)} % used`} />{' '}
      {percent.toFixed(1)} %
    </td>
  );
}

function Usage({ used, cap, unit, label, decimals = 18 }: { used: string; cap: string; unit: string; label: string; decimals?: number }) {
  const usedN = BigInt(used);
  const capN = BigInt(cap);
  const percent = capN > 0n ? Number((usedN * 10000n) / capN) / 100 : 0;
  return (
    <>
      <td>{ether(used, unit, decimals)}</td>
      <td>{ether(cap, unit, decimals)}</td>
      <Share percent={percent} label={`${label}, today's cap`} />
    </>
  );
}

interface Bound {
  used: number;
  limit: number;
  variable: string;
}
interface OrganizationUsage {
  quotas: Array<Bound & { resource: string; label: string }>;
  runData: Bound & { resetsAt: string };
  waitingRuns: Bound;
  skippedRuns: Bound;
  retention: { runDataDays: number | null; auditLogDays: number | null };
}

const megabytes = (bytes: number) => `${(bytes / (1024 * 1024)).toLocaleString('en-US', { maximumFractionDigits: 1 })} MB`;
const days = (n: number | null) => (n === null ? 'for ever' : `${count(n)} days`);

/** What the organization holds and has used against the deployment's limits (GET /api/organization/usage). */
function Limits({ usage }: { usage: OrganizationUsage }) {
  const row = (label: string, bound: Bound, show: (n: number) => string = count) => (
    <tr key={label} data-limit={bound.variable}>
      <th scope="row">{label}</th>
      <td>{show(bound.used)}</td>
      <td>{show(bound.limit)}</td>
      <Share percent={bound.limit > 0 ? (bound.used * 100) / bound.limit : 0} label={label} />
    </tr>
  );
  return (
    <>
      <table>
        <caption>Limits of this deployment and the organization's use</caption>
        <thead>
          <tr>
            <th scope="col">Limit</th>
            <th scope="col">Used</th>
            <th scope="col">Limit</th>
            <th scope="col">Share used</th>
          </tr>
        </thead>
        <tbody>
          {usage.quotas.map((q) => row(q.label, q))}
          {row(`Run data today (starts again ${when(usage.runData.resetsAt)})`, usage.runData, megabytes)}
          {row('Runs waiting for a slot', usage.waitingRuns)}
          {row('Triggered runs skipped today', usage.skippedRuns)}
        </tbody>
      </table>
      <p>
        Finished runs keep their steps {days(usage.retention.runDataDays)}; audit rows are kept {days(usage.retention.auditLogDays)}.
      </p>
    </>
  );
}

export function Spend() {
  const data = useLoad(async () => {
    const [caps, chains, usage] = await Promise.all([
      api<SpendCap>('/api/analytics/spend-cap'),
      api<Chain[]>('/api/chains').catch(() => [] as Chain[]),
      // The limits are a second table: the caps alone still make the page.
      api<OrganizationUsage>('/api/organization/usage').catch(() => undefined),
    ]);
    return { caps, chains, usage };
  }, []);
  const caps = data.data?.caps;
  const chainName = (id: number) => data.data?.chains.find((c) => c.chainId === id)?.name ?? `Chain ${id}`;
  return (
    <section aria-busy={data.loading}>
      <PageHeading>Spend</PageHeading>
      <p>
        Value the organization wallet may move per UTC day, and what it moved today. Owners change caps with <code>PUT /api/organization/spend-caps</code>.
      </p>
      <ErrorNote error={data.error} />
      {caps && (
        <table>
          <caption>Daily caps and today's use</caption>
          <thead>
            <tr>
              <th scope="col">Scope</th>
              <th scope="col">Used today</th>
              <th scope="col">Cap</th>
              <th scope="col">Share used</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <th scope="row">All EVM chains {caps.usingDefaultDailyCap && <small>(deployment default)</small>}</th>
              <Usage used={caps.dailyUsedWei} cap={caps.effectiveDailyCapWei} unit="ETH" label="All EVM chains" />
            </tr>
            <tr>
              <th scope="row">Solana {caps.usingDefaultDailySolanaCap && <small>(deployment default)</small>}</th>
              <Usage used={caps.dailySolanaUsedLamports} cap={caps.effectiveDailySolanaCapLamports} unit="SOL" decimals={9} label="Solana" />
            </tr>
            {caps.chainCaps.map((c) => (
              <tr key={c.chainId} data-chain-id={c.chainId}>
                <th scope="row">{chainName(c.chainId)}</th>
                <Usage used={c.dailyUsedWei} cap={c.effectiveDailyCapWei} unit="ETH" label={chainName(c.chainId)} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {caps && caps.chainCaps.length === 0 && <p>No per-chain caps are set: only the organization-wide cap applies.</p>}
      {data.data?.usage && (
        <>
          <h2>Limits</h2>
          <Limits usage={data.data.usage} />
        </>
      )}
    </section>
  );
}
