import { api, type Chain, type SpendCap } from '../api.ts';
import { ErrorNote, PageHeading, useLoad } from '../components.tsx';
import { ether } from '../format.ts';

function Usage({ used, cap, unit, label, decimals = 18 }: { used: string; cap: string; unit: string; label: string; decimals?: number }) {
  const usedN = BigInt(used);
  const capN = BigInt(cap);
  const percent = capN > 0n ? Number((usedN * 10000n) / capN) / 100 : 0;
  return (
    <>
      <td>{ether(used, unit, decimals)}</td>
      <td>{ether(cap, unit, decimals)}</td>
      <td>
        <meter
          min={0}
          max={100}
          value={Math.min(100, percent)}
          low={70}
          high={90}
          optimum={0}
          aria-label={`${label}: ${percent.toFixed(1)} % of today's cap used`}
        />{' '}
        {percent.toFixed(1)} %
      </td>
    </>
  );
}

export function Spend() {
  const data = useLoad(async () => {
    const [caps, chains] = await Promise.all([api<SpendCap>('/api/analytics/spend-cap'), api<Chain[]>('/api/chains').catch(() => [] as Chain[])]);
    return { caps, chains };
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
    </section>
  );
}
