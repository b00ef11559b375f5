import { describe, expect, it } from 'vitest';
import { ServiceError } from '../src/errors.ts';
import { GRAPH_LIMITS, graphInputSchema, nodesInputSchema, type GraphInput, type InvalidField } from '../src/engine/graph.ts';
import { buildSchemaDocument } from '../src/actions/schema-document.ts';
import { parseCron } from '../src/engine/cron.ts';
import { findTemplateRefs, scanTemplates } from '../src/engine/templates.ts';
import { assertValidGraph, MAX_REPORTED_ENTRIES, prepareGraph } from '../src/engine/validate.ts';

/** The validation catalogue: each check with the exact entry an agent receives. */

type N = { id: string; type?: string; label?: string; config: Record<string, unknown> };

const trigger = (config: Record<string, unknown> = { triggerType: 'Manual' }, id = 'trigger'): N => ({ id, type: 'trigger', label: 'Start', config });
const action = (id: string, label: string, config: Record<string, unknown>): N => ({ id, type: 'action', label, config });
const chain = (...ids: string[]) => ids.slice(1).map((target, i) => ({ source: ids[i], target }));

function graph(nodes: N[], edges: GraphInput['edges'] = []): GraphInput {
  return graphInputSchema.parse({
    nodes: nodes.map((n) => ({ id: n.id, type: n.type ?? 'action', data: { label: n.label, config: n.config } })),
    edges,
  });
}

const check = (input: GraphInput) => prepareGraph(input).report;
const codes = (entries: InvalidField[]) => entries.map((e) => e.code);

const ADDRESS = '0x0000000000000000000000000000000000000001';
const TRANSFER_ABI = [
  {
    type: 'function',
    name: 'transfer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
];
const writeContract = (overrides: Record<string, unknown> = {}) => ({
  actionType: 'web3/write-contract',
  network: '8453',
  contractAddress: ADDRESS,
  abi: JSON.stringify(TRANSFER_ABI),
  abiFunction: 'transfer',
  functionArgs: JSON.stringify([ADDRESS, '1000']),
  ...overrides,
});

describe('a valid workflow', () => {
  it('has no errors and no warnings', () => {
    const report = check(
      graph(
        [
          trigger(),
          action('bal', 'Check Balance', { actionType: 'web3/check-balance', network: '8453', address: ADDRESS }),
          action('cond', 'Enough?', { actionType: 'Condition', condition: '{{@bal:Check Balance.balance}} > 0.1' }),
          action('send', 'Pay', writeContract({ functionArgs: '["{{@bal:Check Balance.address}}", "1000"]' })),
        ],
        [...chain('trigger', 'bal', 'cond'), { source: 'cond', target: 'send', sourceHandle: 'true' }],
      ),
    );
    expect(report).toEqual({ valid: true, nodeCount: 4, errors: [], warnings: [] });
  });
});

describe('the schema document', () => {
  it('shows an example workflow that validates without errors or warnings', () => {
    const { example } = buildSchemaDocument([]).workflowStructure;
    expect(check(graphInputSchema.parse(example))).toMatchObject({ valid: true, errors: [], warnings: [] });
  });
});

describe('triggers', () => {
  it('requires exactly one trigger', () => {
    expect(check(graph([action('a', 'A', { actionType: 'Collect' })])).errors).toEqual([
      expect.objectContaining({ code: 'missing_trigger', nodeId: null, nodeLabel: null, path: 'nodes' }),
    ]);
    const two = check(graph([trigger(), trigger({ triggerType: 'Manual' }, 'second'), action('a', 'A', { actionType: 'Collect' })], chain('trigger', 'a')));
    expect(two.errors).toEqual([expect.objectContaining({ code: 'multiple_triggers', nodeId: 'second', nodeLabel: 'Start', path: 'nodes[1].type' })]);
  });

  it('matches triggerType exactly and suggests the registry key', () => {
    const report = check(graph([trigger({ triggerType: 'manual' })]));
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'unknown_trigger_type',
        nodeId: 'trigger',
        nodeLabel: 'Start',
        path: 'nodes[0].data.config.triggerType',
        received: 'manual',
        suggestion: 'Manual',
      }),
    ]);
  });

  it('requires triggerType on a trigger node', () => {
    expect(check(graph([trigger({})])).errors).toEqual([expect.objectContaining({ code: 'missing_trigger_type', path: 'nodes[0].data.config.triggerType' })]);
  });

  it('checks Schedule cron expressions and IANA time zones', () => {
    const ok = check(graph([trigger({ triggerType: 'Schedule', scheduleCron: '0 9 * * 1-5', scheduleTimezone: 'Europe/Berlin' })]));
    expect(ok.errors).toEqual([]);

    const report = check(graph([trigger({ triggerType: 'Schedule', scheduleCron: '61 * * * *', scheduleTimezone: 'Europe/Berln' })]));
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'invalid_timezone',
        nodeId: 'trigger',
        path: 'nodes[0].data.config.scheduleTimezone',
        received: 'Europe/Berln',
        suggestion: 'Europe/Berlin',
      }),
      expect.objectContaining({ code: 'invalid_cron', nodeId: 'trigger', path: 'nodes[0].data.config.scheduleCron', received: '61 * * * *' }),
    ]);
    expect(report.errors[1].message).toMatch(/minute/);

    expect(check(graph([trigger({ triggerType: 'Schedule' })])).errors).toEqual([
      expect.objectContaining({ code: 'missing_required_field', path: 'nodes[0].data.config.scheduleCron' }),
    ]);
  });
});

describe('actions', () => {
  it('matches actionType exactly and suggests the nearest key', () => {
    const report = check(graph([trigger(), action('c', 'Check', { actionType: 'condition', condition: 'true' })], chain('trigger', 'c')));
    expect(report.errors).toEqual([
      {
        code: 'unknown_action_type',
        nodeId: 'c',
        nodeLabel: 'Check',
        path: 'nodes[1].data.config.actionType',
        received: 'condition',
        message: expect.stringContaining('did you mean "Condition"'),
        suggestion: 'Condition',
      },
    ]);
  });

  it('reports every missing required field, treating empty strings as missing', () => {
    const report = check(graph([trigger(), action('bal', 'Balance', { actionType: 'web3/check-balance', network: '' })], chain('trigger', 'bal')));
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'missing_required_field', nodeId: 'bal', nodeLabel: 'Balance', path: 'nodes[1].data.config.network', received: '' }),
      expect.objectContaining({ code: 'missing_required_field', nodeId: 'bal', nodeLabel: 'Balance', path: 'nodes[1].data.config.address' }),
    ]);
  });

  it('names the misspelled field that was probably meant', () => {
    const report = check(graph([trigger(), action('c', 'Cond', { actionType: 'Condition', expression: 'true' })], chain('trigger', 'c')));
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'missing_required_field',
        path: 'nodes[1].data.config.condition',
        suggestion: 'condition',
        message: expect.stringContaining('rename expression to condition'),
      }),
    ]);
    expect(report.warnings).toEqual([]);
  });

  it('requires condition on Condition and checks conditionConfig operators', () => {
    const report = check(
      graph(
        [
          trigger(),
          action('c', 'Cond', {
            actionType: 'Condition',
            conditionConfig: { group: { logic: 'AND', rules: [{ leftOperand: '1', operator: 'greaterThan', rightOperand: '0' }] } },
          }),
        ],
        chain('trigger', 'c'),
      ),
    );
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'missing_required_field', path: 'nodes[1].data.config.condition' }),
      expect.objectContaining({ code: 'unknown_operator', path: 'nodes[1].data.config.conditionConfig.group.rules[0].operator', received: 'greaterThan' }),
    ]);
  });

  it('warns about an action without actionType instead of refusing it', () => {
    const report = check(graph([trigger(), action('a', 'Later', {})], chain('trigger', 'a')));
    expect(report.valid).toBe(true);
    expect(report.warnings).toEqual([expect.objectContaining({ code: 'unconfigured_action', nodeId: 'a', path: 'nodes[1].data.config.actionType' })]);
  });

  it('checks field types and closed option sets from the registry hints', () => {
    const report = check(
      graph(
        [
          trigger(),
          action('h', 'Fetch', { actionType: 'HTTP Request', endpoint: 'https://example.com', httpMethod: 'get', httpHeaders: '{not json' }),
          action('l', 'Loop', { actionType: 'For Each', arraySource: '[]', maxIterations: 'many' }),
        ],
        chain('trigger', 'h', 'l'),
      ),
    );
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'invalid_option', nodeId: 'h', path: 'nodes[1].data.config.httpMethod', received: 'get', suggestion: 'GET' }),
      expect.objectContaining({ code: 'invalid_json', nodeId: 'h', path: 'nodes[1].data.config.httpHeaders' }),
      expect.objectContaining({ code: 'invalid_field_type', nodeId: 'l', path: 'nodes[2].data.config.maxIterations', received: 'many' }),
    ]);
  });

  it('warns about config fields the action does not have, with a suggestion', () => {
    const report = check(graph([trigger(), action('w', 'Write', writeContract({ args: '[]' }))], chain('trigger', 'w')));
    expect(report.errors).toEqual([]);
    expect(report.warnings).toEqual([expect.objectContaining({ code: 'unknown_config_field', path: 'nodes[1].data.config.args', suggestion: 'functionArgs' })]);
  });

  it("does not call a field the runner reads unknown: HTTP Request's timeout", () => {
    const http = { actionType: 'HTTP Request', endpoint: 'https://api.example.com/x', httpMethod: 'GET', timeout: 30000 };
    const report = check(graph([trigger(), action('h', 'Fetch', http)], chain('trigger', 'h')));
    expect(report.errors).toEqual([]);
    expect(report.warnings).toEqual([]);
  });
});

describe('contract calls', () => {
  const one = (config: Record<string, unknown>) => check(graph([trigger(), action('w', 'Write', config)], chain('trigger', 'w')));

  it('refuses a raw ABI array and says to stringify it', () => {
    const report = one(writeContract({ abi: TRANSFER_ABI }));
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'abi_not_string',
        nodeId: 'w',
        nodeLabel: 'Write',
        path: 'nodes[1].data.config.abi',
        suggestion: JSON.stringify(TRANSFER_ABI),
      }),
    ]);
    expect(report.errors[0].message).toContain('JSON.stringify');
  });

  it('refuses an abi string that is not a JSON array', () => {
    expect(one(writeContract({ abi: '{"type":"function"}' })).errors).toEqual([
      expect.objectContaining({ code: 'invalid_abi', path: 'nodes[1].data.config.abi' }),
    ]);
    expect(one(writeContract({ abi: '[{"type":"function",' })).errors).toEqual([
      expect.objectContaining({ code: 'invalid_abi', path: 'nodes[1].data.config.abi' }),
    ]);
  });

  it('checks abiFunction against the abi', () => {
    expect(one(writeContract({ abiFunction: 'transferr' })).errors).toEqual([
      expect.objectContaining({ code: 'unknown_abi_function', path: 'nodes[1].data.config.abiFunction', received: 'transferr', suggestion: 'transfer' }),
    ]);
  });

  it('requires functionArgs to be a JSON array string; templates inside are fine', () => {
    expect(one(writeContract({ functionArgs: [ADDRESS, '1'] })).errors).toEqual([
      expect.objectContaining({ code: 'function_args_not_string', path: 'nodes[1].data.config.functionArgs', suggestion: JSON.stringify([ADDRESS, '1']) }),
    ]);
    expect(one(writeContract({ functionArgs: '{"to":"0x"}' })).errors).toEqual([
      expect.objectContaining({ code: 'invalid_function_args', path: 'nodes[1].data.config.functionArgs' }),
    ]);
    expect(one(writeContract({ functionArgs: `["${ADDRESS}", {{@__system:System.unixTimestamp}}]` })).errors).toEqual([]);
    expect(one(writeContract({ functionArgs: `["${ADDRESS}"]` })).errors).toEqual([
      expect.objectContaining({ code: 'function_args_count', path: 'nodes[1].data.config.functionArgs' }),
    ]);
  });

  it('accepts legacy functionName with a warning, and refuses it when it contradicts abiFunction', () => {
    const legacy = one(writeContract({ abiFunction: undefined, functionName: 'transfer' }));
    expect(legacy.valid).toBe(true);
    expect(legacy.warnings).toEqual([
      expect.objectContaining({
        code: 'legacy_field',
        nodeId: 'w',
        nodeLabel: 'Write',
        path: 'nodes[1].data.config.functionName',
        received: 'transfer',
        suggestion: 'abiFunction',
      }),
    ]);

    const conflict = one(writeContract({ functionName: 'approve' }));
    expect(conflict.errors).toEqual([
      expect.objectContaining({ code: 'conflicting_fields', path: 'nodes[1].data.config.functionName', suggestion: 'abiFunction' }),
    ]);
    expect(conflict.errors[0].message).toMatch(/"approve".*"transfer"/);
  });

  it('requires abiFunction when no legacy name is present', () => {
    expect(one(writeContract({ abiFunction: undefined })).errors).toEqual([
      expect.objectContaining({ code: 'missing_required_field', path: 'nodes[1].data.config.abiFunction' }),
    ]);
  });
});

describe('edges', () => {
  it('must reference existing nodes, with a did-you-mean', () => {
    const report = check(
      graph(
        [trigger(), action('balance', 'Balance', { actionType: 'Collect' })],
        [
          { source: 'trigger', target: 'balanse' },
          { source: 'triger', target: 'balance' },
        ],
      ),
    );
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'unknown_edge_target', nodeId: null, path: 'edges[0].target', received: 'balanse', suggestion: 'balance' }),
      expect.objectContaining({ code: 'unknown_edge_source', nodeId: null, path: 'edges[1].source', received: 'triger', suggestion: 'trigger' }),
    ]);
  });

  it('refuses self-loops, edges into the trigger and cycles, naming the nodes on the cycle', () => {
    const report = check(
      graph(
        [trigger(), action('a', 'A', { actionType: 'Collect' }), action('b', 'B', { actionType: 'Collect' }), action('c', 'C', { actionType: 'Collect' })],
        [...chain('trigger', 'a', 'b', 'c'), { source: 'c', target: 'a' }, { source: 'b', target: 'b' }, { source: 'c', target: 'trigger' }],
      ),
    );
    expect(codes(report.errors).sort()).toEqual(['cycle_detected', 'edge_into_trigger', 'self_loop']);
    expect(report.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'self_loop', nodeId: 'b', path: 'edges[4]' }),
        expect.objectContaining({ code: 'edge_into_trigger', nodeId: 'trigger', path: 'edges[5].target' }),
      ]),
    );
    const cycle = report.errors.find((e) => e.code === 'cycle_detected')!;
    expect([...(cycle.received as string[])].sort()).toEqual(['a', 'b', 'c']);
    expect(cycle.message).toContain('→');
  });

  it('names the nodes of a simple cycle', () => {
    const report = check(
      graph(
        [trigger(), action('a', 'A', { actionType: 'Collect' }), action('b', 'B', { actionType: 'Collect' })],
        [...chain('trigger', 'a', 'b'), { source: 'b', target: 'a' }],
      ),
    );
    expect(report.errors).toEqual([expect.objectContaining({ code: 'cycle_detected', nodeId: 'a', nodeLabel: 'A', path: 'edges[2]', received: ['a', 'b'] })]);
    expect(report.errors[0].message).toContain('"a" → "b" → "a"');
  });

  it('requires true/false handles on edges leaving a Condition', () => {
    const report = check(
      graph(
        [
          trigger(),
          action('c', 'Cond', { actionType: 'Condition', condition: 'true' }),
          action('y', 'Yes', { actionType: 'Collect' }),
          action('n', 'No', { actionType: 'Collect' }),
        ],
        [
          { source: 'trigger', target: 'c' },
          { source: 'c', target: 'y', sourceHandle: 'True' },
          { source: 'c', target: 'n' },
        ],
      ),
    );
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'invalid_condition_handle',
        nodeId: 'c',
        nodeLabel: 'Cond',
        path: 'edges[1].sourceHandle',
        received: 'True',
        suggestion: 'true',
      }),
      expect.objectContaining({ code: 'invalid_condition_handle', nodeId: 'c', path: 'edges[2].sourceHandle', received: null }),
    ]);
  });

  it('warns about nodes the trigger never reaches', () => {
    const report = check(
      graph([trigger(), action('a', 'A', { actionType: 'Collect' }), action('lost', 'Lost', { actionType: 'Collect' })], chain('trigger', 'a')),
    );
    expect(report.valid).toBe(true);
    expect(report.warnings).toEqual([expect.objectContaining({ code: 'unreachable_node', nodeId: 'lost', nodeLabel: 'Lost', path: 'nodes[2]' })]);
  });
});

describe('templates', () => {
  const nodes = (condition: unknown) => [
    trigger(),
    action('bal', 'Check Balance', { actionType: 'web3/check-balance', network: '8453', address: ADDRESS }),
    action('side', 'Side', { actionType: 'web3/check-balance', network: '8453', address: ADDRESS }),
    action('c', 'Cond', { actionType: 'Condition', condition: 'true', conditionConfig: condition }),
  ];
  const edges = [...chain('trigger', 'bal', 'c'), { source: 'trigger', target: 'side' }];
  const rules = (...operands: string[]) => ({
    group: { logic: 'AND', rules: operands.map((leftOperand) => ({ leftOperand, operator: '>', rightOperand: '0' })) },
  });

  it('accepts upstream references and system builtins anywhere in the config', () => {
    const report = check(graph(nodes(rules('{{@bal:Check Balance.balance}}', 'x {{@trigger:Start.amount}} {{@__system:System.unixTimestampMs}}')), edges));
    expect(report).toMatchObject({ valid: true, warnings: [] });
  });

  it('refuses references to nodes that are not upstream, unknown nodes and unknown builtins', () => {
    const report = check(
      graph(nodes(rules('{{@side:Side.balance}}', '{{@balanse:Check Balance.balance}}', '{{@__system:System.now}}', '{{@c:Cond.result}}')), edges),
    );
    const base = 'nodes[3].data.config.conditionConfig.group.rules';
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'template_not_upstream',
        nodeId: 'c',
        nodeLabel: 'Cond',
        path: `${base}[0].leftOperand`,
        received: '{{@side:Side.balance}}',
      }),
      expect.objectContaining({ code: 'template_unknown_node', nodeId: 'c', path: `${base}[1].leftOperand`, suggestion: 'bal' }),
      expect.objectContaining({ code: 'unknown_builtin', nodeId: 'c', path: `${base}[2].leftOperand`, received: '{{@__system:System.now}}' }),
      expect.objectContaining({ code: 'template_not_upstream', nodeId: 'c', path: `${base}[3].leftOperand`, message: expect.stringContaining('own output') }),
    ]);
  });

  it('refuses malformed templates', () => {
    const report = check(graph(nodes(rules('{{@bal}}', 'a {{@bal:Check Balance.balance')), edges));
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'invalid_template', path: 'nodes[3].data.config.conditionConfig.group.rules[0].leftOperand', received: '{{@bal}}' }),
      expect.objectContaining({
        code: 'invalid_template',
        path: 'nodes[3].data.config.conditionConfig.group.rules[1].leftOperand',
        message: expect.stringContaining('unbalanced'),
      }),
    ]);
  });

  it('warns about a stale label or an output field the node does not have', () => {
    const report = check(graph(nodes(rules('{{@bal:Balance.balance}}', '{{@bal:Check Balance.balanse}}')), edges));
    expect(report.errors).toEqual([]);
    expect(report.warnings).toEqual([
      expect.objectContaining({
        code: 'template_label_mismatch',
        path: 'nodes[3].data.config.conditionConfig.group.rules[0].leftOperand',
        suggestion: '{{@bal:Check Balance.balance}}',
      }),
      expect.objectContaining({ code: 'unknown_output_field', path: 'nodes[3].data.config.conditionConfig.group.rules[1].leftOperand', suggestion: 'balance' }),
    ]);
  });
});

describe('all at once', () => {
  it('reports every problem of a broken graph in one answer', () => {
    const report = check(
      graph(
        [
          trigger({ triggerType: 'manual' }),
          action('c', 'Check', { actionType: 'condition' }),
          action('w', 'Write', writeContract({ abi: TRANSFER_ABI, network: '' })),
          action('x', 'Orphan', { actionType: 'web3/check-balance', network: '8453', address: '{{@nowhere:X.y}}' }),
        ],
        [...chain('trigger', 'c'), { source: 'c', target: 'w' }, { source: 'w', target: 'ghost' }],
      ),
    );
    expect(report.valid).toBe(false);
    expect(codes(report.errors)).toEqual([
      'unknown_trigger_type',
      'unknown_action_type',
      'missing_required_field',
      'abi_not_string',
      'unknown_edge_target',
      'template_unknown_node',
    ]);
    expect(codes(report.warnings)).toEqual(['unreachable_node']);
    for (const entry of report.errors) expect(entry.message.length).toBeGreaterThan(20);
  });

  it('merges normalization problems first', () => {
    const input = graphInputSchema.parse({
      nodes: [
        { id: 't', type: 'trigger', data: { type: 'action', config: { triggerType: 'Manual' } } },
        { id: 't', type: 'action', data: {} },
      ],
      edges: [],
    });
    expect(codes(check(input).errors)).toEqual(['data_type_mismatch', 'duplicate_node_id']);
  });
});

describe('assertValidGraph', () => {
  it('returns the normalized graph and warnings when valid', () => {
    const { graph: saved, warnings } = assertValidGraph(graph([trigger(), action('a', '', {})], chain('trigger', 'a')));
    expect(saved.nodes[1].data).toMatchObject({ type: 'action', label: 'Action', status: 'idle' });
    expect(codes(warnings)).toEqual(['unconfigured_action']);
  });

  it('throws 400 invalid_workflow with every error in invalidFields', () => {
    let thrown: unknown;
    try {
      assertValidGraph(graph([trigger({ triggerType: 'manual' }), action('c', 'Check', { actionType: 'condition' })], chain('trigger', 'c')));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ServiceError);
    const error = thrown as ServiceError;
    expect(error.status).toBe(400);
    expect(error.code).toBe('invalid_workflow');
    expect(error.message).toMatch(/^The workflow has 2 validation errors; the first: nodes\[0\]\.data\.config\.triggerType \(node "trigger" "Start"\)/);
    const body = error.toBody() as { invalidFields: InvalidField[]; warnings: InvalidField[] };
    expect(codes(body.invalidFields)).toEqual(['unknown_trigger_type', 'unknown_action_type']);
    expect(body.invalidFields[1]).toMatchObject({ nodeId: 'c', nodeLabel: 'Check', suggestion: 'Condition' });
  });
});

describe('hostile input', () => {
  it('reports a too deeply nested config instead of crashing', () => {
    let deep: Record<string, unknown> = { leaf: '{{@x:Y.z}}' };
    for (let i = 0; i < 5000; i++) deep = { deep };
    const report = check(
      graph([trigger(), action('a', 'Deep', { actionType: 'HTTP Request', endpoint: 'https://x', httpMethod: 'GET', httpBody: deep })], chain('trigger', 'a')),
    );
    expect(report.errors).toEqual([expect.objectContaining({ code: 'config_too_deep', nodeId: 'a', path: 'nodes[1].data.config' })]);
  });

  it('reports an oversized config', () => {
    const report = check(
      graph([trigger(), action('a', 'Big', { actionType: 'code/run-code', code: 'x'.repeat(GRAPH_LIMITS.maxConfigBytes + 1) })], chain('trigger', 'a')),
    );
    expect(report.errors).toEqual([expect.objectContaining({ code: 'config_too_large', nodeId: 'a', path: 'nodes[1].data.config' })]);
  });

  it('lists at most MAX_REPORTED_ENTRIES errors and counts the rest', () => {
    const edges = Array.from({ length: MAX_REPORTED_ENTRIES + 100 }, (_, i) => ({ source: 'trigger', target: `missing-${i}` }));
    const report = check(graph([trigger()], edges));
    expect(report.errors).toHaveLength(MAX_REPORTED_ENTRIES + 1);
    expect(report.errors.at(-1)).toMatchObject({ code: 'too_many_problems', received: 100 });
  });

  it('truncates long received values', () => {
    const report = check(graph([trigger(), action('a', 'A', { actionType: 'x'.repeat(5000) })], chain('trigger', 'a')));
    expect(String(report.errors[0].received).length).toBeLessThan(260);
  });

  it('validates a 500-node graph quickly', () => {
    const nodes: N[] = [trigger()];
    for (let i = 1; i < GRAPH_LIMITS.maxNodes; i++) {
      const previous = i === 1 ? 'trigger' : `n${i - 1}`;
      nodes.push(
        action(`n${i}`, `Step ${i}`, {
          actionType: 'Condition',
          condition: `{{@${previous}:${i === 1 ? 'Start' : `Step ${i - 1}`}.result}} == true && {{@trigger:Start.x}}`,
        }),
      );
    }
    const edges = nodes.slice(1).map((n, i) => ({ source: nodes[i].id, target: n.id, sourceHandle: i === 0 ? undefined : 'true' }));
    const input = graph(nodes, edges);
    const started = performance.now();
    const report = check(input);
    const elapsed = performance.now() - started;
    expect(report).toMatchObject({ valid: true, nodeCount: 500 });
    expect(elapsed).toBeLessThan(1000);
  });

  it('refuses more than 500 nodes at the input schema', () => {
    const nodes = Array.from({ length: 600 }, (_, i) => ({ id: `n${i}`, type: 'action', data: { config: {} } }));
    const parsed = nodesInputSchema.safeParse(nodes);
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0].message).toContain('at most 500 nodes');
  });
});

describe('findTemplateRefs', () => {
  it('finds every template in nested values with its field path and location', () => {
    const refs = findTemplateRefs({
      a: 'send {{@bal:Check Balance.balance}} to {{@trigger:Start.body.items[2].to}}',
      list: [{ deep: ['{{ @fetch:HTTP Request.data[0][1] }}'] }],
      n: 5,
    });
    expect(refs).toEqual([
      { raw: '{{@bal:Check Balance.balance}}', nodeId: 'bal', label: 'Check Balance', path: ['balance'], location: 'a' },
      { raw: '{{@trigger:Start.body.items[2].to}}', nodeId: 'trigger', label: 'Start', path: ['body', 'items', '2', 'to'], location: 'a' },
      { raw: '{{ @fetch:HTTP Request.data[0][1] }}', nodeId: 'fetch', label: 'HTTP Request', path: ['data', '0', '1'], location: 'list[0].deep[0]' },
    ]);
  });

  it('reads labels containing dots whole when the label is known', () => {
    const raw = '{{@p:Price v1.2.value}}';
    expect(findTemplateRefs(raw)[0]).toMatchObject({ label: 'Price v1', path: ['2', 'value'] });
    expect(findTemplateRefs(raw, { labelOf: (id) => (id === 'p' ? 'Price v1.2' : undefined) })[0]).toMatchObject({ label: 'Price v1.2', path: ['value'] });
  });

  it('reports malformed templates with the reason', () => {
    const { refs, malformed } = scanTemplates({ x: '{{@a}} {{@:L.f}} {{@a:L.b..c}} {{@a:L.f' });
    expect(refs).toEqual([]);
    expect(malformed.map((m) => m.raw)).toEqual(['{{@a}}', '{{@:L.f}}', '{{@a:L.b..c}}', '{{@a:L.f']);
    expect(malformed.every((m) => m.location === 'x' && m.reason.length > 10)).toBe(true);
  });
});

describe('parseCron', () => {
  const from = new Date('2025-01-15T00:00:00Z');
  const runs = (expression: string, timezone?: string, count = 2) => {
    const parsed = parseCron(expression, timezone);
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed.nextRuns(count, from).map((d) => d.toISOString());
  };

  it('computes run times in the time zone', () => {
    expect(runs('0 9 * * *', 'Europe/Berlin')).toEqual(['2025-01-15T08:00:00.000Z', '2025-01-16T08:00:00.000Z']);
    expect(runs('0 9 * * *')).toEqual(['2025-01-15T09:00:00.000Z', '2025-01-16T09:00:00.000Z']);
  });

  it('accepts seconds, nicknames and Quartz-style ? in the day fields', () => {
    expect(runs('*/20 * * * * *')).toEqual(['2025-01-15T00:00:20.000Z', '2025-01-15T00:00:40.000Z']);
    expect(runs('@daily')).toEqual(['2025-01-16T00:00:00.000Z', '2025-01-17T00:00:00.000Z']);
    expect(runs('0 9 ? * MON')).toEqual(['2025-01-20T09:00:00.000Z', '2025-01-27T09:00:00.000Z']);
  });

  it('refuses what would not schedule predictably', () => {
    expect(parseCron('0 0 30 2 *')).toMatchObject({ ok: false, code: 'invalid_cron', message: expect.stringContaining('never fires') });
    expect(parseCron('? 9 * * *')).toMatchObject({ ok: false, code: 'invalid_cron' });
    expect(parseCron('2025-01-01T00:00:00')).toMatchObject({ ok: false, code: 'invalid_cron' });
    expect(parseCron('0 9 * * *', 'Mars/Olympus')).toMatchObject({ ok: false, code: 'invalid_timezone', message: expect.stringContaining('IANA') });
  });
});
