import { describe, expect, it } from 'vitest';
import { graphInputSchema, type GraphInput } from '../src/engine/graph.ts';
import { defaultGraph, normalizeGraph } from '../src/engine/normalize.ts';
import { validateGraph } from '../src/engine/validate.ts';

/** SPEC.md Node: the normalization cases, one by one. */

const manual = { id: 'trigger', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
const balance = { network: '8453', address: '0x0000000000000000000000000000000000000001' };

/** Input as the REST and MCP edges hand it over: parsed by the input schema. */
const parse = (input: unknown): GraphInput => graphInputSchema.parse(input);

describe('normalizeGraph', () => {
  it('rewrites a plugin slug sent as node type into config.actionType and makes the node an action', () => {
    const { graph, problems } = normalizeGraph(
      parse({
        nodes: [manual, { id: 'bal', type: 'web3/check-balance', data: { config: balance } }],
        edges: [{ source: 'trigger', target: 'bal' }],
      }),
    );
    expect(problems).toEqual([]);
    const node = graph.nodes[1];
    expect(node.type).toBe('action');
    expect(node.data.type).toBe('action');
    expect(node.data.config).toEqual({ actionType: 'web3/check-balance', ...balance });
    expect(node.data.label).toBe('Check Balance'); // the registry's label
    expect(validateGraph(graph)).toMatchObject({ valid: true, errors: [] });
  });

  it('refuses a plugin slug type that contradicts config.actionType, naming both', () => {
    const { problems } = normalizeGraph(
      parse({ nodes: [manual, { id: 'bal', type: 'web3/check-balance', data: { config: { actionType: 'web3/check-token-balance' } } }], edges: [] }),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ code: 'conflicting_action_type', nodeId: 'bal', path: 'nodes[1].type', received: 'web3/check-balance' });
    expect(problems[0].message).toContain('web3/check-token-balance');
  });

  it('adds data.type equal to the outer type', () => {
    const { graph } = normalizeGraph(parse({ nodes: [manual, { id: 'a', type: 'action', data: { config: { actionType: 'Collect' } } }], edges: [] }));
    expect(graph.nodes.map((n) => [n.type, n.data.type])).toEqual([
      ['trigger', 'trigger'],
      ['action', 'action'],
    ]);
  });

  it('accepts data.type when it equals the outer type, and refuses a mismatch naming both values', () => {
    const same = normalizeGraph(parse({ nodes: [{ ...manual, data: { ...manual.data, type: 'trigger' } }], edges: [] }));
    expect(same.problems).toEqual([]);

    const { problems } = normalizeGraph(parse({ nodes: [{ ...manual, data: { ...manual.data, type: 'action' } }], edges: [] }));
    expect(problems).toEqual([
      expect.objectContaining({
        code: 'data_type_mismatch',
        nodeId: 'trigger',
        nodeLabel: 'Start',
        path: 'nodes[0].data.type',
        received: 'action',
        suggestion: 'trigger',
      }),
    ]);
    expect(problems[0].message).toMatch(/"action".*"trigger"/);
  });

  it('auto-assigns status and position when omitted, laying nodes out by depth', () => {
    const { graph } = normalizeGraph(
      parse({
        nodes: [
          manual,
          { id: 'a', type: 'action', data: { config: { actionType: 'Collect' } } },
          { id: 'b', type: 'action', data: { config: { actionType: 'Collect' } } },
          { id: 'c', type: 'action', data: { config: { actionType: 'Collect' } } },
        ],
        edges: [
          { source: 'trigger', target: 'a' },
          { source: 'trigger', target: 'b' },
          { source: 'a', target: 'c' },
        ],
      }),
    );
    expect(graph.nodes.every((n) => n.data.status === 'idle')).toBe(true);
    const at = Object.fromEntries(graph.nodes.map((n) => [n.id, n.position]));
    expect(at.trigger.x).toBe(0);
    expect(at.a.x).toBeGreaterThan(at.trigger.x);
    expect(at.b.x).toBe(at.a.x);
    expect(at.b.y).not.toBe(at.a.y);
    expect(at.c.x).toBeGreaterThan(at.a.x);
  });

  it('keeps a sent status and position, and moves data.position to the top level', () => {
    const { graph, problems } = normalizeGraph(
      parse({
        nodes: [
          { ...manual, position: { x: 10, y: 20 }, data: { ...manual.data, status: 'success' } },
          { id: 'a', type: 'action', data: { config: { actionType: 'Collect' }, position: { x: 300, y: 40 } } },
        ],
        edges: [],
      }),
    );
    expect(problems).toEqual([]);
    expect(graph.nodes[0]).toMatchObject({ position: { x: 10, y: 20 }, data: { status: 'success' } });
    expect(graph.nodes[1].position).toEqual({ x: 300, y: 40 });
    expect(graph.nodes[1].data).not.toHaveProperty('position');
  });

  it('refuses an unknown status value', () => {
    const { problems } = normalizeGraph(parse({ nodes: [{ ...manual, data: { ...manual.data, status: 'pending' } }], edges: [] }));
    expect(problems).toEqual([
      expect.objectContaining({ code: 'invalid_status', nodeId: 'trigger', path: 'nodes[0].data.status', received: 'pending', suggestion: 'idle' }),
    ]);
  });

  it('preserves ids and unknown fields of nodes and edges', () => {
    const { graph } = normalizeGraph(
      parse({
        nodes: [
          { ...manual, id: 'My Trigger', selected: true, data: { ...manual.data, note: 'kept' } },
          { id: 'x-1', type: 'action', data: { config: { actionType: 'Collect' } } },
        ],
        edges: [{ id: 'edge-7', source: 'My Trigger', target: 'x-1', animated: true }],
      }),
    );
    expect(graph.nodes.map((n) => n.id)).toEqual(['My Trigger', 'x-1']);
    expect(graph.nodes[0]).toMatchObject({ selected: true, data: { note: 'kept' } });
    expect(graph.edges[0]).toMatchObject({ id: 'edge-7', animated: true });
  });

  it('gives edges without id a readable unique one', () => {
    const { graph } = normalizeGraph(
      parse({
        nodes: [
          manual,
          { id: 'c', type: 'action', data: { config: { actionType: 'Condition', condition: 'true' } } },
          { id: 'd', type: 'action', data: { config: { actionType: 'Collect' } } },
        ],
        edges: [
          { source: 'trigger', target: 'c' },
          { source: 'c', target: 'd', sourceHandle: 'true' },
          { source: 'c', target: 'd', sourceHandle: 'true' },
        ],
      }),
    );
    expect(graph.edges.map((e) => e.id)).toEqual(['e-trigger-c', 'e-c-d-true', 'e-c-d-true-2']);
  });

  it('reports duplicate node ids and duplicate edge ids', () => {
    const { problems } = normalizeGraph(
      parse({
        nodes: [manual, { id: 'a', type: 'action', data: { config: {} } }, { id: 'a', type: 'action', data: { label: 'Second', config: {} } }],
        edges: [
          { id: 'e1', source: 'trigger', target: 'a' },
          { id: 'e1', source: 'a', target: 'a' },
        ],
      }),
    );
    expect(problems).toEqual([
      expect.objectContaining({ code: 'duplicate_node_id', nodeId: 'a', nodeLabel: 'Second', path: 'nodes[2].id' }),
      expect.objectContaining({ code: 'duplicate_edge_id', path: 'edges[1].id', received: 'e1' }),
    ]);
  });

  it('defaults labels: the trigger type for triggers, the registry label for actions', () => {
    const { graph } = normalizeGraph(
      parse({
        nodes: [
          { id: 't', type: 'trigger', data: { config: { triggerType: 'Event' } } },
          { id: 'a', type: 'action', data: { config: { actionType: 'web3/write-contract' } } },
          { id: 'u', type: 'action', data: { config: {} } },
        ],
        edges: [],
      }),
    );
    expect(graph.nodes.map((n) => n.data.label)).toEqual(['Contract Event', 'Write Contract', 'Action']);
  });

  it('turns numbers sent for string fields into their exact decimal text', () => {
    const { graph } = normalizeGraph(
      parse({ nodes: [manual, { id: 'bal', type: 'web3/check-balance', data: { config: { network: 8453, address: balance.address } } }], edges: [] }),
    );
    expect(graph.nodes[1].data.config.network).toBe('8453');
  });

  it('does not change its input', () => {
    const input = parse({ nodes: [{ id: 'bal', type: 'web3/check-balance', data: { config: { network: 8453 } } }], edges: [{ source: 'a', target: 'b' }] });
    const copy = structuredClone(input);
    normalizeGraph(input);
    expect(input).toEqual(copy);
  });

  it('is idempotent: normalizing a normalized graph changes nothing', () => {
    const { graph } = normalizeGraph(
      parse({ nodes: [manual, { id: 'bal', type: 'web3/check-balance', data: { config: balance } }], edges: [{ source: 'trigger', target: 'bal' }] }),
    );
    const again = normalizeGraph(graph);
    expect(again.problems).toEqual([]);
    expect(again.graph).toEqual(graph);
  });
});

describe('defaultGraph', () => {
  it('is a Manual trigger connected to an empty action node', () => {
    const graph = defaultGraph();
    expect(graph.nodes).toHaveLength(2);
    const [trigger, action] = graph.nodes;
    expect(trigger).toMatchObject({ type: 'trigger', data: { type: 'trigger', status: 'idle', config: { triggerType: 'Manual' } } });
    expect(action).toMatchObject({ type: 'action', data: { type: 'action', status: 'idle', config: {} } });
    expect(graph.edges).toEqual([expect.objectContaining({ id: expect.any(String), source: trigger.id, target: action.id })]);
    expect(action.position.x).toBeGreaterThan(trigger.position.x);
  });

  it('passes save-time validation with one warning for the unconfigured action', () => {
    const report = validateGraph(defaultGraph());
    expect(report).toMatchObject({ valid: true, nodeCount: 2, errors: [] });
    expect(report.warnings).toEqual([expect.objectContaining({ code: 'unconfigured_action', nodeId: 'action', path: 'nodes[1].data.config.actionType' })]);
  });
});
