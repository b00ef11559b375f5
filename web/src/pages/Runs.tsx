import { useEffect, useRef, useState } from 'preact/hooks';
import { api, query, type RunRow } from '../api.ts';
import { ErrorNote, Link, PageHeading, Status } from '../components.tsx';
import { duration, gas, when } from '../format.ts';
import { LiveBadge, useSummaryStream } from '../live.tsx';
import { RangeSelect } from './Overview.tsx';

const STATUSES = ['pending', 'running', 'success', 'error'];

const runName = (run: RunRow) => (run.source === 'workflow' ? (run.workflowName ?? run.workflowId) : `${run.type} on ${run.network}`);
const runDuration = (run: RunRow) =>
  run.source === 'workflow' ? run.durationMs : run.completedAt ? Date.parse(run.completedAt) - Date.parse(run.createdAt) : null;

export function Runs() {
  const [range, setRange] = useState('7d');
  const [status, setStatus] = useState('');
  const [source, setSource] = useState('');
  const [runs, setRuns] = useState<RunRow[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const filters = useRef({ range, status, source });
  filters.current = { range, status, source };

  /** The first page again; rows already loaded further down are kept (a newer run only pushes them along). */
  const refresh = async () => {
    const asked = filters.current;
    try {
      const page = await api<{ runs: RunRow[]; nextCursor: string | null }>(`/api/analytics/runs${query({ ...asked, limit: 50 })}`);
      if (JSON.stringify(filters.current) !== JSON.stringify(asked)) return; // the filters changed meanwhile
      setRuns((old) => {
        const fresh = new Set(page.runs.map((r) => r.id));
        const oldest = page.runs.at(-1)?.createdAt;
        const rest = oldest ? old.filter((r) => !fresh.has(r.id) && r.createdAt < oldest) : [];
        return [...page.runs, ...rest];
      });
      setNextCursor((cursor) => (cursor === null || page.runs.length < 50 ? page.nextCursor : cursor));
      setError(undefined);
    } catch (e) {
      setError(e);
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    setRuns([]);
    setNextCursor(null);
    setLoading(true);
    void refresh();
  }, [range, status, source]);

  const stream = useSummaryStream(range, () => void refresh());

  const more = async () => {
    if (!nextCursor) return;
    try {
      const page = await api<{ runs: RunRow[]; nextCursor: string | null }>(
        `/api/analytics/runs${query({ range, status, source, limit: 50, cursor: nextCursor })}`,
      );
      setRuns((old) => {
        const seen = new Set(old.map((r) => r.id));
        return [...old, ...page.runs.filter((r) => !seen.has(r.id))];
      });
      setNextCursor(page.nextCursor);
    } catch (e) {
      setError(e);
    }
  };

  return (
    <section aria-busy={loading}>
      <div class="page-head">
        <PageHeading>Runs</PageHeading>
        <LiveBadge state={stream} />
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter runs">
        <RangeSelect value={range} onChange={setRange} />
        <label class="inline">
          Status{' '}
          <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label class="inline">
          Source{' '}
          <select value={source} onChange={(e) => setSource((e.target as HTMLSelectElement).value)}>
            <option value="">Workflows and direct</option>
            <option value="workflow">Workflows</option>
            <option value="direct">Direct executions</option>
          </select>
        </label>
      </form>
      <ErrorNote error={error} />
      <table class="runs">
        <caption class="visually-hidden">Runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Source</th>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col">Duration</th>
            <th scope="col">Gas</th>
          </tr>
        </thead>
        <tbody aria-live="polite" aria-relevant="additions">
          {runs.map((run) => (
            <tr key={run.id} data-run-id={run.id}>
              <td>
                <Link to={`/runs/${encodeURIComponent(run.id)}`}>{runName(run)}</Link>
              </td>
              <td>{run.source}</td>
              <td>
                <Status status={run.status} />
              </td>
              <td>{when(run.createdAt)}</td>
              <td>{duration(runDuration(run))}</td>
              <td>{run.source === 'direct' ? gas(run.gasUsedWei) : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {!loading && runs.length === 0 && !error && <p>No runs match these filters in this range.</p>}
      {nextCursor && (
        <button type="button" onClick={more}>
          Load older runs
        </button>
      )}
    </section>
  );
}
