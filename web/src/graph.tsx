import type { Workflow } from './api.ts';

/**
 * A read-only drawing of a workflow: nodes in columns by their distance from
 * the trigger (longest path), edges as curves. Laid out here rather than from
 * stored positions, which agents creating workflows over the API rarely set.
 */

const NODE_W = 168;
const NODE_H = 48;
const GAP_X = 64;
const GAP_Y = 24;

export function layout(workflow: Pick<Workflow, 'nodes' | 'edges'>) {
  const ids = workflow.nodes.map((n) => n.id);
  const known = new Set(ids);
  const edges = workflow.edges.filter((e) => known.has(e.source) && known.has(e.target) && e.source !== e.target);
  const depth = new Map(ids.map((id) => [id, 0]));
  // Longest-path layering; the pass count bound keeps a cycle from looping forever.
  for (let pass = 0; pass < ids.length; pass++) {
    let changed = false;
    for (const e of edges) {
      const next = depth.get(e.source)! + 1;
      if (next > depth.get(e.target)! && next < ids.length) {
        depth.set(e.target, next);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const rows = new Map<number, number>();
  const positions = new Map<string, { x: number; y: number }>();
  for (const id of ids) {
    const column = depth.get(id)!;
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    positions.set(id, { x: 8 + column * (NODE_W + GAP_X), y: 8 + row * (NODE_H + GAP_Y) });
  }
  const columns = Math.max(1, ...[...depth.values()].map((d) => d + 1));
  const maxRows = Math.max(1, ...rows.values());
  return { positions, edges, width: 16 + columns * NODE_W + (columns - 1) * GAP_X, height: 16 + maxRows * NODE_H + (maxRows - 1) * GAP_Y };
}

const label = (node: Workflow['nodes'][number]) => node.data?.label || node.id;
const kind = (node: Workflow['nodes'][number]) =>
  node.type === 'trigger'
    ? `trigger: ${String(node.data?.config?.triggerType ?? '')}`
    : String(node.data?.config?.actionType ?? node.data?.type ?? node.type ?? '');
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function WorkflowGraph({ workflow }: { workflow: Workflow }) {
  const { positions, edges, width, height } = layout(workflow);
  const titleId = `graph-title-${workflow.id}`;
  const byId = new Map(workflow.nodes.map((n) => [n.id, n]));
  return (
    <div class="graph">
      <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-labelledby={titleId} data-testid="workflow-graph">
        <title id={titleId}>{`Graph of ${workflow.name}: ${workflow.nodes.length} steps, ${edges.length} connections`}</title>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="arrow" />
          </marker>
        </defs>
        {edges.map((e, i) => {
          const a = positions.get(e.source)!;
          const b = positions.get(e.target)!;
          const x1 = a.x + NODE_W;
          const y1 = a.y + NODE_H / 2;
          const x2 = b.x;
          const y2 = b.y + NODE_H / 2;
          const mid = (x1 + x2) / 2;
          return <path key={e.id ?? i} class="edge" d={`M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`} marker-end="url(#arrow)" />;
        })}
        {workflow.nodes.map((node) => {
          const p = positions.get(node.id)!;
          return (
            <g key={node.id} class={`node ${node.type === 'trigger' ? 'trigger' : ''}`} data-node-id={node.id}>
              <rect x={p.x} y={p.y} width={NODE_W} height={NODE_H} rx="8" />
              <text x={p.x + 10} y={p.y + 20} class="node-label">
                {clip(label(node), 22)}
              </text>
              <text x={p.x + 10} y={p.y + 38} class="node-kind">
                {clip(kind(node), 26)}
              </text>
            </g>
          );
        })}
      </svg>
      <details>
        <summary>Steps and connections as text</summary>
        <ul>
          {edges.length === 0 && workflow.nodes.map((n) => <li key={n.id}>{label(n)}</li>)}
          {edges.map((e, i) => (
            <li key={e.id ?? i}>
              {label(byId.get(e.source)!)} → {label(byId.get(e.target)!)}
            </li>
          ))}
        </ul>
      </details>
    </div>
  );
}
