import { api, type Chain, type Step } from '../api.ts';
import { ErrorNote, Link, PageHeading, Status, useLoad } from '../components.tsx';
import { chainOf, duration, pretty, transactionHashes, when } from '../format.ts';

/** Explorer link for a transaction, when the step names a chain the catalog knows and that chain has an explorer. */
function explorerFor(chains: Chain[], chain: string | undefined): string | undefined {
  if (!chain) return undefined;
  const wanted = chain.toLowerCase();
  const found = chains.find((c) => String(c.chainId) === wanted || c.name.toLowerCase() === wanted);
  return found?.explorerUrl ?? undefined;
}

function TxLinks({ step, chains }: { step: Step; chains: Chain[] }) {
  const hashes = transactionHashes(step.output);
  if (hashes.length === 0) return null;
  const explorer = explorerFor(chains, chainOf(step.input) ?? chainOf(step.output));
  return (
    <p>
      Transactions:{' '}
      {hashes.map((hash, i) => (
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
      ))}
    </p>
  );
}

export function RunDetail({ id }: { id: string }) {
  const data = useLoad(async () => {
    const [steps, chains] = await Promise.all([
      api<{ steps: Step[] }>(`/api/analytics/runs/${encodeURIComponent(id)}/steps`),
      api<Chain[] | { chains: Chain[] }>('/api/chains').catch(() => [] as Chain[]),
    ]);
    return { steps: steps.steps, chains: Array.isArray(chains) ? chains : chains.chains };
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
      {data.data && data.data.steps.length === 0 && <p>This run has no steps logged yet.</p>}
      {data.data && (
        <ol class="steps">
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
              <TxLinks step={step} chains={data.data!.chains} />
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
