import { api, ApiError, type Chain, type Step } from '../api.ts';
import { ErrorNote, Link, PageHeading, Status, useLoad } from '../components.tsx';
import { chainOf, duration, pretty, transactionHashes, when } from '../format.ts';

/** What the run-level routes add to the steps: which workflow or direct action, its outcome, and each transaction's chain. */
type RunInfo =
  | {
      kind: 'workflow';
      workflowId: string;
      status: string;
      error: string | null;
      createdAt: string;
      completedAt: string | null;
      transactions: Array<{ hash: string; nodeId: string; chainId?: number; network?: string }>;
    }
  | { kind: 'direct'; type: string; status: string; error?: string; chainId: number; createdAt: string; completedAt: string | null; transactionHash?: string };

async function runInfo(id: string): Promise<RunInfo | undefined> {
  const notFound = (e: unknown) => {
    if (e instanceof ApiError && e.status === 404) return undefined;
    throw e;
  };
  const details = await api<{
    execution: Omit<Extract<RunInfo, { kind: 'workflow' }>, 'kind' | 'transactions'> & {
      transactionHashes: Extract<RunInfo, { kind: 'workflow' }>['transactions'];
    };
  }>(`/api/workflows/executions/${encodeURIComponent(id)}/details`).catch(notFound);
  if (details) return { kind: 'workflow', ...details.execution, transactions: details.execution.transactionHashes ?? [] };
  const direct = await api<Omit<Extract<RunInfo, { kind: 'direct' }>, 'kind'>>(`/api/execute/${encodeURIComponent(id)}/status`).catch(notFound);
  return direct ? { kind: 'direct', ...direct } : undefined;
}

/** The explorer of a chain named by id or name, when the catalog gives it one. */
function explorerFor(chains: Chain[], chain: string | number | undefined): string | undefined {
  if (chain === undefined) return undefined;
  const wanted = String(chain).toLowerCase();
  const found = chains.find((c) => String(c.chainId) === wanted || c.name.toLowerCase() === wanted);
  return found?.explorerUrl ?? undefined;
}

function TxLinks({ step, chains, run }: { step: Step; chains: Chain[]; run?: RunInfo }) {
  const known = run?.kind === 'workflow' ? run.transactions.filter((t) => t.nodeId === step.nodeId) : [];
  const hashes = [...new Set([...known.map((t) => t.hash), ...transactionHashes(step.output)])];
  if (hashes.length === 0) return null;
  const stepChain = run?.kind === 'direct' ? run.chainId : (chainOf(step.input) ?? chainOf(step.output));
  return (
    <p>
      Transactions:{' '}
      {hashes.map((hash, i) => {
        const tx = known.find((t) => t.hash === hash);
        const explorer = explorerFor(chains, tx?.chainId ?? tx?.network ?? stepChain);
        return (
          <span key={hash}>
            {i > 0 && ', '}
            {explorer ? (
              <a href={`${explorer.replace(/\/$/, '')}/tx/${hash}`} rel="noreferrer noopener" target="_blank">
                <code>{hash}</code>
                <span class="visually-hidden"> (opens the block explorer)</span>
              </a>
            ) : (
              <code>{hash}</code>
            )}
          </span>
        );
      })}
    </p>
  );
}

function RunSummary({ run }: { run: RunInfo }) {
  return (
    <dl class="run-summary">
      <dt>Source</dt>
      <dd>
        {run.kind === 'workflow' ? (
          <>
            workflow <Link to={`/workflows/${encodeURIComponent(run.workflowId)}`}>{run.workflowId}</Link>
          </>
        ) : (
          `direct ${run.type} on chain ${run.chainId}`
        )}
      </dd>
      <dt>Status</dt>
      <dd>
        <Status status={run.status} />
      </dd>
      <dt>Started</dt>
      <dd>{when(run.createdAt)}</dd>
      <dt>Finished</dt>
      <dd>{when(run.completedAt)}</dd>
      {run.error && (
        <>
          <dt>Error</dt>
          <dd class="error">{run.error}</dd>
        </>
      )}
    </dl>
  );
}

export function RunDetail({ id }: { id: string }) {
  const data = useLoad(async () => {
    const [steps, chains, run] = await Promise.all([
      api<{ steps: Step[]; dataPrunedAt?: string }>(`/api/analytics/runs/${encodeURIComponent(id)}/steps`),
      api<Chain[]>('/api/chains').catch(() => [] as Chain[]),
      // The summary is a nicety: the steps alone still make the page.
      runInfo(id).catch(() => undefined),
    ]);
    return { steps: steps.steps, dataPrunedAt: steps.dataPrunedAt, chains, run };
  }, [id]);
  return (
    <section aria-busy={data.loading}>
      <p>
        <Link to="/runs">← All runs</Link>
      </p>
      <PageHeading>
        Run <code>{id}</code>
      </PageHeading>
      <ErrorNote error={data.error} />
      {data.data?.run && <RunSummary run={data.data.run} />}
      {data.data?.dataPrunedAt && (
        <p role="note">
          This run's steps were removed on {when(data.data.dataPrunedAt)}: this gateway keeps run data for a set number of days. Its outcome and transactions
          are above.
        </p>
      )}
      {data.data && !data.data.dataPrunedAt && data.data.steps.length === 0 && <p>This run has no steps logged yet.</p>}
      {data.data && (
        <ol class="steps" aria-label="Steps">
          {data.data.steps.map((step, i) => (
            <li key={`${step.nodeId}-${i}`} class="step" data-step={step.nodeId}>
              <h2>
                {step.nodeName ?? step.nodeId} <Status status={step.status} />
              </h2>
              <p class="meta">
                Node <code>{step.nodeId}</code> · started {when(step.timestamp)} · took {duration(step.durationMs)}
              </p>
              {step.error && (
                <p class="error">
                  <strong>Error:</strong> {step.error}
                </p>
              )}
              <TxLinks step={step} chains={data.data!.chains} run={data.data!.run} />
              <div class="io">
                <details open={i < 3}>
                  <summary>Input</summary>
                  <pre>{pretty(step.input)}</pre>
                </details>
                <details open={i < 3}>
                  <summary>Output</summary>
                  <pre>{pretty(step.output)}</pre>
                </details>
              </div>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
