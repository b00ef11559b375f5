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
