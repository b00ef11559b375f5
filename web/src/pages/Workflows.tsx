import { useState } from 'preact/hooks';
import { api, type Execution, type Workflow } from '../api.ts';
import { ErrorNote, Link, PageHeading, Status, useLoad } from '../components.tsx';
import { WorkflowGraph } from '../graph.tsx';
import { when } from '../format.ts';
import { navigate } from '../router.ts';

const triggerOf = (w: Workflow) => String(w.nodes.find((n) => n.type === 'trigger')?.data?.config?.triggerType ?? 'none');

function LastRuns({ workflowId, version }: { workflowId: string; version: number }) {
  const runs = useLoad(() => api<Execution[]>(`/api/workflows/${encodeURIComponent(workflowId)}/executions`), [workflowId, version]);
  if (runs.error) return <ErrorNote error={runs.error} />;
  const last = (runs.data ?? []).slice(0, 5);
  if (!runs.loading && last.length === 0) return <p>No runs yet.</p>;
  return (
    <ul class="last-runs" aria-label="Last runs">
      {last.map((run) => (
        <li key={run.id}>
          <Link to={`/runs/${encodeURIComponent(run.id)}`}>{when(run.createdAt)}</Link> <Status status={run.status} />
        </li>
      ))}
    </ul>
  );
}

function WorkflowCard({ workflow, onChanged }: { workflow: Workflow; onChanged: () => void }) {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [version, setVersion] = useState(0);
  const act = async (what: () => Promise<string>) => {
    setBusy(true);
    setError(undefined);
    setMessage(undefined);
    try {
      setMessage(await what());
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const runNow = () =>
    act(async () => {
      const started = await api<{ executionId: string }>(`/api/workflows/${encodeURIComponent(workflow.id)}/execute`, { method: 'POST', body: { input: {} } });
      setVersion((v) => v + 1);
      return `Started run ${started.executionId}.`;
    });
  const toggle = () =>
    act(async () => {
      await api(`/api/workflows/${encodeURIComponent(workflow.id)}`, { method: 'PATCH', body: { enabled: !workflow.enabled } });
      onChanged();
      return workflow.enabled ? 'Disabled.' : 'Enabled.';
    });
  const headingId = `wf-${workflow.id}`;
  return (
    <article class="workflow" aria-labelledby={headingId} data-workflow-id={workflow.id}>
      <header>
        <h2 id={headingId}>
          <Link to={`/workflows/${encodeURIComponent(workflow.id)}`}>{workflow.name}</Link>
        </h2>
        <span class={`status ${workflow.enabled ? 'ok' : 'neutral'}`}>{workflow.enabled ? 'enabled' : 'disabled'}</span>
        <span class="meta">
          trigger {triggerOf(workflow)} · updated {when(workflow.updatedAt)}
        </span>
      </header>
      {workflow.description && <p>{workflow.description}</p>}
      <WorkflowGraph workflow={workflow} />
      <div class="actions">
        <button type="button" onClick={runNow} disabled={busy}>
          Run now
        </button>
        <button type="button" class="secondary" onClick={toggle} disabled={busy}>
          {workflow.enabled ? 'Disable' : 'Enable'}
        </button>
        <span role="status">{message}</span>
      </div>
      <ErrorNote error={error} />
      <h3>Last runs</h3>
      <LastRuns workflowId={workflow.id} version={version} />
    </article>
  );
}

/** Workflows shown per page: the list is read in pages (an organization may hold thousands), newest first. */
const PAGE = 50;

/** The first `pages` pages of the organization's workflows, and whether there are more. */
async function firstPages(pages: number): Promise<{ rows: Workflow[]; more: boolean }> {
  const rows: Workflow[] = [];
  for (let p = 0; p < pages; p++) {
    const page = await api<Workflow[]>(`/api/workflows?limit=${PAGE}&offset=${p * PAGE}`);
    rows.push(...page);
    if (page.length < PAGE) return { rows, more: false };
  }
  return { rows, more: true };
}

/**
 * One workflow of this organization. The API also answers another organization's public workflow by id (isOwner
 * false); drawn here it looked like the organization's own, under its name and with its buttons, so a link to one
 * was a page of the attacker's text on the gateway's dashboard. It is not found here, as in the organization's list.
 */
async function ownWorkflow(id: string): Promise<{ rows: Workflow[]; more: boolean }> {
  const workflow = await api<Workflow>(`/api/workflows/${encodeURIComponent(id)}`);
  if (workflow.isOwner === false) throw new Error(`Workflow ${id} is not in this organization.`);
  return { rows: [workflow], more: false };
}

export function Workflows({ id }: { id?: string }) {
  const [pages, setPages] = useState(1);
  const list = useLoad(() => (id ? ownWorkflow(id) : firstPages(pages)), [id, pages]);
  return (
    <section aria-busy={list.loading}>
      {id && (
        <p>
          <Link to="/workflows">← All workflows</Link>
        </p>
      )}
      <PageHeading>{id ? (list.data?.rows[0]?.name ?? 'Workflow') : 'Workflows'}</PageHeading>
      <ErrorNote error={list.error} />
      {list.data?.rows.length === 0 && (
        <p>
          No workflows yet. Create one through MCP (<code>create_workflow</code>) or <code>POST /api/workflows/create</code>. <a href="/docs">Documentation</a>
        </p>
      )}
      {list.data?.rows.map((w) => (
        <WorkflowCard key={w.id} workflow={w} onChanged={() => void list.reload()} />
      ))}
      {list.data?.more && (
        <button type="button" onClick={() => setPages(pages + 1)}>
          Show {PAGE} more workflows
        </button>
      )}
      {id && list.error ? (
        <button type="button" onClick={() => navigate('/workflows')}>
          Back to the list
        </button>
      ) : null}
    </section>
  );
}
