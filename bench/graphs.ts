/** A linear graph of `count` nodes (one trigger plus HTTP requests), for size tests and benchmarks. */
export function chainGraph(count: number) {
  const nodes = [{ id: 'n0', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }];
  const edges = [];
  for (let i = 1; i < count; i++) {
    nodes.push({
      id: `n${i}`,
      type: 'action',
      data: { label: `Step ${i}`, config: { actionType: 'HTTP Request', endpoint: 'https://example.com/api', httpMethod: 'GET' } },
    } as never);
    edges.push({ id: `e${i}`, source: `n${i - 1}`, target: `n${i}` });
  }
  return { nodes, edges };
}

/** The largest graph a tenant may save in one request body: 500 nodes (the node bound), each an HTTP request with a 2,000-character body. About 1.1 MB. */
export function bulkyGraph() {
  const { nodes, edges } = chainGraph(500);
  for (const n of nodes.slice(1) as { data: { config: Record<string, unknown> } }[]) n.data.config.httpBody = 'x'.repeat(2_000);
  return { nodes, edges };
}

const trigger = { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
const node = (id: string, label: string, config: Record<string, unknown>) => ({ id, type: 'action', data: { label, config } });

/** Manual → Condition → math/aggregate: the engine rows' short run. */
export const conditionGraph = () => ({
  nodes: [
    trigger,
    node('c', 'Check', { actionType: 'Condition', condition: '{{@t:Start.amount}} > 3' }),
    node('m', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[{{@t:Start.amount}}, 1]' }),
  ],
  edges: [
    { source: 't', target: 'c' },
    { source: 'c', target: 'm', sourceHandle: 'true' },
  ],
});

/** For Each over the trigger's `items`, squaring each with math/aggregate, then Collect: inline work only (no sandbox, no I/O). */
export const forEachGraph = () => ({
  nodes: [
    trigger,
    node('loop', 'Loop', { actionType: 'For Each', arraySource: '{{@t:Start.items}}' }),
    node('m', 'Square', { actionType: 'math/aggregate', operation: 'product', values: '[{{@loop:Loop.currentItem}}, {{@loop:Loop.currentItem}}]' }),
    node('col', 'Collect', { actionType: 'Collect' }),
  ],
  edges: [
    { source: 't', target: 'loop' },
    { source: 'loop', target: 'm' },
    { source: 'm', target: 'col' },
  ],
});
