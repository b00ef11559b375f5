import { getAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import {
  actionCategories,
  actions,
  actionTypes,
  CONDITION_OPERATORS,
  getAction,
  getTrigger,
  protocolContractAddress,
  suggestActionType,
  suggestConfigField,
  suggestTriggerType,
  triggerTypes,
} from '../src/actions/index.ts';
import { buildSchemaDocument } from '../src/actions/schema-document.ts';
import { searchProtocolActions } from '../src/actions/search.ts';
import { isServiceError } from '../src/errors.ts';
import { buildFeatureSnapshot } from '../src/org/features.ts';
import type { AnyTool, ToolContext } from '../tools/define.ts';
import { featureTools } from '../tools/features.ts';
import { schemaTools } from '../tools/schemas.ts';

const PLANS = ['free', 'pro', 'enterprise', null];
const isFieldMap = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string' && v.length > 0);

describe('action registry data', () => {
  it('lists every action the spec and reference name', () => {
    const expected = [
      'Condition',
      'HTTP Request',
      'Database Query',
      'For Each',
      'Collect',
      'web3/check-balance',
      'web3/check-token-balance',
      'web3/transfer-funds',
      'web3/transfer-token',
      'web3/read-contract',
      'web3/write-contract',
      'web3/get-transaction',
      'web3/decode-calldata',
      'web3/query-events',
      'web3/approve-token',
      'web3/check-allowance',
      'aave-v3/supply',
      'aave-v3/withdraw',
      'aave-v3/borrow',
      'aave-v3/repay',
      'aave-v3/get-user-account-data',
      'discord/send-message',
      'slack/send-message',
      'telegram/send-message',
      'sendgrid/send-email',
      'resend/send-email',
      'webhook/send-webhook',
      'code/run-code',
      'math/aggregate',
    ];
    expect(new Set(actionTypes())).toEqual(new Set(expected));
    expect(actionTypes()).toHaveLength(new Set(actionTypes()).size);
  });

  it('gives every action the documented fields with the right types', () => {
    for (const a of actions) {
      expect(typeof a.actionType, a.actionType).toBe('string');
      expect(a.label.length, a.actionType).toBeGreaterThan(0);
      expect(a.description.length, a.actionType).toBeGreaterThan(20);
      expect(actionCategories()).toContain(a.category);
      expect(a.integration === null || typeof a.integration === 'string').toBe(true);
      expect(isFieldMap(a.requiredFields), a.actionType).toBe(true);
      expect(isFieldMap(a.optionalFields), a.actionType).toBe(true);
      expect(isFieldMap(a.outputFields), a.actionType).toBe(true);
      expect(PLANS).toContain(a.requiredPlan);
      expect(typeof a.featureEnabled).toBe('boolean');
      // A field is either required or optional, never both.
      const overlap = Object.keys(a.requiredFields).filter((f) => f in a.optionalFields);
      expect(overlap, a.actionType).toEqual([]);
    }
  });

  it('keeps requiresCredentials off system actions and on every plugin action', () => {
    for (const a of actions) {
      if (a.actionType.includes('/')) {
        expect(a.integration, a.actionType).toBe(a.actionType.split('/')[0]);
        expect(typeof a.requiresCredentials, a.actionType).toBe('boolean');
      } else {
        expect(a.integration).toBeNull();
        expect(a.category).toBe('System');
        expect(Object.hasOwn(a, 'requiresCredentials'), a.actionType).toBe(false);
      }
    }
  });

  it('gives Condition its true/false handles and operators, and no other action handles', () => {
    const condition = getAction('Condition')!;
    expect(condition.integration === null && condition.sourceHandles).toEqual(['true', 'false']);
    expect(condition.requiredFields).toHaveProperty('condition');
    expect(condition.optionalFields).toHaveProperty('conditionConfig');
    expect(condition.outputFields).toHaveProperty('result');
    for (const op of ['==', '!==', '>=', 'contains', 'matchesRegex', 'isEmpty', 'doesNotExist']) {
      expect(CONDITION_OPERATORS).toContain(op);
    }
    for (const a of actions.filter((x) => x.actionType !== 'Condition')) {
      expect(Object.hasOwn(a, 'sourceHandles'), a.actionType).toBe(false);
    }
  });

  it('documents write-contract with abiFunction, JSON-string abi and args, and routing fields', () => {
    const write = getAction('web3/write-contract')!;
    expect(Object.keys(write.requiredFields).sort()).toEqual(['abi', 'abiFunction', 'contractAddress', 'network']);
    expect(write.requiredFields.abi).toMatch(/JSON/);
    expect(write.optionalFields.functionArgs).toMatch(/JSON array/);
    expect(write.optionalFields.web3Connection).toMatch(/safe:<safeWalletId>/);
    for (const f of ['usePrivateMempool', 'strict', 'ethValue', 'gasLimitMultiplier']) expect(write.optionalFields).toHaveProperty(f);
    expect(write).not.toHaveProperty('requiredFields.functionName');
    expect(write.outputFields).toHaveProperty('transactionHash');
    expect(write.requiresCredentials).toBe(true);
    const example = write.exampleConfig!;
    expect(typeof example.abi).toBe('string');
    expect(Array.isArray(JSON.parse(example.abi as string))).toBe(true);
    expect(Array.isArray(JSON.parse(example.functionArgs as string))).toBe(true);
  });

  it('matches the fields the spec gives for check-balance, aave-v3/supply and telegram', () => {
    expect(Object.keys(getAction('web3/check-balance')!.requiredFields).sort()).toEqual(['address', 'network']);
    expect(Object.keys(getAction('aave-v3/supply')!.requiredFields).sort()).toEqual(['amount', 'asset', 'network', 'onBehalfOf']);
    expect(getAction('telegram/send-message')!.requiredFields).toMatchObject({ chatId: expect.any(String), message: expect.any(String) });
    expect(Object.keys(getAction('aave-v3/get-user-account-data')!.outputFields).sort()).toEqual([
      'availableBorrowsBase',
      'currentLiquidationThreshold',
      'healthFactor',
      'ltv',
      'totalCollateralBase',
      'totalDebtBase',
    ]);
  });

  it('describes each Aave V3 action as contract data with checksummed Pool addresses', () => {
    const expected: Record<number, string> = {
      1: '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2',
      8453: '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5',
      42161: '0x794a61358D6845594F94dc1DB02A252b5b4814aD',
      10: '0x794a61358D6845594F94dc1DB02A252b5b4814aD',
      137: '0x794a61358D6845594F94dc1DB02A252b5b4814aD',
      11155111: '0x6Ae43d3271ff6888e7Fc43Fd7321a503ff738951',
      84532: '0x07eA79F68B2B3df564D0A34F8e19D9B1e339814b',
    };
    const aave = actions.filter((a) => a.actionType.startsWith('aave-v3/'));
    expect(aave).toHaveLength(5);
    for (const a of aave) {
      if (a.integration === null) throw new Error('protocol action without integration');
      const p = a.protocol!;
      expect(a.category).toBe('DeFi');
      expect(p.addresses).toEqual(expected);
      for (const address of Object.values(p.addresses)) expect(getAddress(address)).toBe(address);
      expect(p.abi.type).toBe('function');
      expect(p.abi.name).toBe(p.functionName);
      // Every ABI input is fed, in order, by a config field or a constant.
      expect(p.args.map((x) => x.name)).toEqual(p.abi.inputs.map((i) => i.name));
      for (const arg of p.args) {
        if ('field' in arg) expect({ ...a.requiredFields, ...a.optionalFields }, `${a.actionType} ${arg.field}`).toHaveProperty(arg.field);
      }
      expect(a.requiresCredentials).toBe(p.kind === 'write');
      expect(p.kind === 'read').toBe(p.abi.stateMutability === 'view');
    }
    expect(protocolContractAddress('aave-v3/supply', 8453)).toBe(expected[8453]);
    expect(protocolContractAddress('aave-v3/supply', 999)).toBeUndefined();
    expect(protocolContractAddress('web3/read-contract', 1)).toBeUndefined();
  });

  it('is frozen, so a consumer cannot change it for everyone', () => {
    const condition = getAction('Condition')!;
    expect(() => {
      (condition.requiredFields as Record<string, string>).extra = 'x';
    }).toThrow();
    expect(getAction('Condition')!.requiredFields).not.toHaveProperty('extra');
  });
});

describe('registry lookups', () => {
  it('getAction matches keys exactly', () => {
    expect(getAction('Condition')?.actionType).toBe('Condition');
    expect(getAction('web3/read-contract')?.label).toBe('Read Contract');
    for (const miss of ['condition', 'CONDITION', ' Condition', 'web3/Read-Contract', 'http request', 'read-contract', '']) {
      expect(getAction(miss), miss).toBeUndefined();
    }
  });

  it('suggests the intended action type for case differences and typos', () => {
    expect(suggestActionType('condition')).toBe('Condition');
    expect(suggestActionType('web3/readcontract')).toBe('web3/read-contract');
    expect(suggestActionType('http request')).toBe('HTTP Request');
    expect(suggestActionType('foreach')).toBe('For Each');
    expect(suggestActionType('Conditon')).toBe('Condition');
    expect(suggestActionType('web3/write_contract')).toBe('web3/write-contract');
    expect(suggestActionType('web3/chek-balance')).toBe('web3/check-balance');
    expect(suggestActionType('transfer-funds')).toBe('web3/transfer-funds');
    expect(suggestActionType('aave-v3/suply')).toBe('aave-v3/supply');
  });

  it('suggests nothing for unrelated or ambiguous input', () => {
    expect(suggestActionType('xyz')).toBeUndefined();
    expect(suggestActionType('send-message')).toBeUndefined(); // discord, slack and telegram all have one
    expect(suggestActionType('')).toBeUndefined();
  });

  it('suggests config field names, including the abiFunction alias', () => {
    expect(suggestConfigField('web3/write-contract', 'functionName')).toBe('abiFunction');
    expect(suggestConfigField('web3/write-contract', 'abiFuncton')).toBe('abiFunction');
    expect(suggestConfigField('web3/transfer-funds', 'to')).toBe('recipientAddress');
    expect(suggestConfigField('HTTP Request', 'method')).toBe('httpMethod');
    expect(suggestConfigField('web3/check-balance', 'zzzzzz')).toBeUndefined();
  });

  it('has exactly the six Pascal-case trigger types', () => {
    expect(triggerTypes()).toEqual(['Manual', 'Schedule', 'Webhook', 'Event', 'Block', 'Transfer']);
    expect(getTrigger('Schedule')?.requiredFields).toHaveProperty('scheduleCron');
    expect(getTrigger('Schedule')?.optionalFields).toHaveProperty('scheduleTimezone');
    expect(getTrigger('Manual')?.requiredFields).toEqual({});
    expect(getTrigger('Event')?.requiredFields).toHaveProperty('contractABI');
    expect(getTrigger('Block')?.outputFields).toHaveProperty('blockHash');
    expect(getTrigger('manual')).toBeUndefined();
    for (const t of triggerTypes()) {
      const trigger = getTrigger(t)!;
      expect(isFieldMap(trigger.requiredFields) && isFieldMap(trigger.optionalFields) && isFieldMap(trigger.outputFields)).toBe(true);
    }
  });

  it('suggests trigger types', () => {
    expect(suggestTriggerType('manual')).toBe('Manual');
    expect(suggestTriggerType('Manual Trigger')).toBe('Manual');
    expect(suggestTriggerType('cron')).toBe('Schedule');
    expect(suggestTriggerType('webhooks')).toBe('Webhook');
    expect(suggestTriggerType('nothing-like-it')).toBeUndefined();
  });
});

describe('feature snapshot', () => {
  const snapshot = buildFeatureSnapshot();

  it('is the self-hosted enterprise snapshot with every feature enabled whose actions can run here', () => {
    expect(snapshot.plan).toBe('enterprise');
    expect(snapshot.billingEnabled).toBe(false);
    // Every feature's actions run here since chat, e-mail and event queries got runners (issue 16).
    expect(snapshot.features.filter((f) => !f.enabled).map((f) => f.id)).toEqual([]);
    for (const f of snapshot.features) expect(f.enabled, f.id).toBe(f.actionTypes.every((type) => getAction(type)!.runnable !== false));
    expect(snapshot.enabledFeatureIds).toEqual(snapshot.features.filter((f) => f.enabled).map((f) => f.id));
    for (const f of snapshot.features) {
      expect(Object.keys(f).sort()).toEqual(['actionTypes', 'category', 'description', 'enabled', 'id', 'name', 'requiredPlan']);
      expect(PLANS).toContain(f.requiredPlan);
    }
  });

  it('links every action to a feature and every feature only to real actions', () => {
    const ids = new Set(snapshot.features.map((f) => f.id));
    for (const a of actions) expect(ids.has(a.featureId), a.actionType).toBe(true);
    const listed = snapshot.features.flatMap((f) => f.actionTypes);
    for (const type of listed) expect(getAction(type), type).toBeDefined();
    // Each action belongs to exactly one feature, and no feature is empty.
    expect([...listed].sort()).toEqual([...actionTypes()].sort());
    for (const f of snapshot.features) expect(f.actionTypes.length, f.id).toBeGreaterThan(0);
  });

  it('agrees with each action on plan and rollout', () => {
    for (const f of snapshot.features) {
      for (const type of f.actionTypes) {
        const a = getAction(type)!;
        expect(a.requiredPlan).toBe(f.requiredPlan);
        expect(a.featureEnabled).toBe(f.enabled);
      }
    }
  });
});

describe('schema document', () => {
  const chains = [
    { chainId: 8453, name: 'Base', chainType: 'evm', isTestnet: false, status: 'stable' as const },
    { chainId: 999, name: 'HyperEVM', chainType: 'evm', isTestnet: false, status: 'experimental' as const },
  ];
  const doc = buildSchemaDocument(chains);

  it('has version 1.0.0 and every documented key', () => {
    expect(doc.version).toBe('1.0.0');
    expect(Object.keys(doc).sort()).toEqual([
      'actions',
      'builtinVariables',
      'chains',
      'platform',
      'templateSyntax',
      'tips',
      'triggers',
      'version',
      'workflowStructure',
    ]);
    expect(doc.chains).toEqual(chains);
    expect(doc.platform.name).toBe('Flowgate');
    expect(doc.templateSyntax.pattern).toBe('{{@<nodeId>:<Label>.<field>}}');
    expect(doc.builtinVariables).toMatchObject({ nodeId: '__system', label: 'System' });
    expect(Object.keys(doc.builtinVariables.variables).sort()).toEqual(['isoTimestamp', 'unixTimestamp', 'unixTimestampMs']);
    expect(doc.tips.length).toBeGreaterThan(3);
  });

  it('keys actions and triggers by the values config uses', () => {
    expect(Object.keys(doc.actions)).toEqual(actionTypes());
    for (const [key, a] of Object.entries(doc.actions)) expect(a.actionType).toBe(key);
    expect(Object.keys(doc.triggers)).toEqual(triggerTypes());
    expect(doc.actions.Condition.sourceHandles).toEqual(['true', 'false']);
    expect(doc.actions.Condition).not.toHaveProperty('requiresCredentials');
    expect(doc.actions['discord/send-message'].requiresCredentials).toBe(true);
  });

  it('shows condition handles on edges and a valid example workflow', () => {
    const structure = doc.workflowStructure;
    expect(structure.edge.shape.sourceHandle).toMatch(/true.*false/);
    const { nodes, edges } = structure.example;
    expect(nodes.filter((n) => n.type === 'trigger')).toHaveLength(1);
    for (const n of nodes) {
      const config = n.data.config as Record<string, string | undefined>;
      if (n.type === 'trigger') expect(getTrigger(config.triggerType ?? '')).toBeDefined();
      else expect(getAction(config.actionType ?? ''), config.actionType).toBeDefined();
    }
    const ids = new Set(nodes.map((n) => n.id));
    for (const e of edges) expect(ids.has(e.source) && ids.has(e.target)).toBe(true);
  });

  it('example configs name their own action and fill every required field', () => {
    for (const a of actions) {
      if (!a.exampleConfig) continue;
      expect(a.exampleConfig.actionType).toBe(a.actionType);
      for (const f of Object.keys(a.requiredFields)) expect(a.exampleConfig, `${a.actionType}.${f}`).toHaveProperty(f);
    }
  });

  it('filters actions by category case-insensitively and refuses unknown categories', () => {
    const defi = buildSchemaDocument(chains, { category: 'defi' });
    expect(Object.keys(defi.actions).every((k) => k.startsWith('aave-v3/'))).toBe(true);
    expect(Object.keys(defi.triggers)).toEqual(triggerTypes());
    try {
      buildSchemaDocument(chains, { category: 'Bogus' });
      expect.unreachable();
    } catch (error) {
      expect(isServiceError(error) && error.status).toBe(400);
      expect(isServiceError(error) && error.code).toBe('invalid_input');
      expect((error as Error).message).toContain('Web3');
    }
  });
});

describe('protocol search', () => {
  const resolveChain = (term: string) => ({ base: 8453, arbitrum: 42161, hyperevm: 999 })[term];

  it('finds actions by intent and narrows by chain', () => {
    expect(searchProtocolActions({ query: 'supply usdc on base', resolveChain }).actions[0].actionType).toBe('aave-v3/supply');
    expect(searchProtocolActions({ query: 'health factor' }).actions[0].actionType).toBe('aave-v3/get-user-account-data');
    expect(searchProtocolActions({ query: 'lend' }).actions.map((a) => a.actionType)).toEqual(['aave-v3/supply']);
    expect(searchProtocolActions({ query: 'borrow on hyperevm', resolveChain }).actions).toEqual([]);
    expect(searchProtocolActions({}).actions).toHaveLength(5);
  });

  it('answers an unknown protocol with 404 and a suggestion', () => {
    try {
      searchProtocolActions({ protocol: 'aave' });
      expect.unreachable();
    } catch (error) {
      expect(isServiceError(error) && error.status).toBe(404);
      expect(isServiceError(error) && error.details.suggestion).toBe('aave-v3');
    }
  });
});

describe('registry entries', () => {
  const publicChains = [
    {
      id: 'base',
      chainId: 8453,
      name: 'Base',
      symbol: 'ETH',
      chainType: 'evm',
      explorerUrl: null,
      explorerAddressPath: null,
      explorerApiUrl: null,
      explorerApiType: null,
      isTestnet: false,
      isEnabled: true,
      usePrivateMempoolRpc: false,
    },
    {
      id: 'hyperevm',
      chainId: 999,
      name: 'HyperEVM',
      symbol: 'HYPE',
      chainType: 'evm',
      explorerUrl: null,
      explorerAddressPath: null,
      explorerApiUrl: null,
      explorerApiType: null,
      isTestnet: false,
      isEnabled: true,
      usePrivateMempoolRpc: false,
    },
  ];
  const ctx = {
    principal: null,
    transport: 'rest',
    ip: '127.0.0.1',
    setHeader() {},
    services: {
      chains: {
        list: () => publicChains,
        status: (id: number) => (id === 999 ? 'experimental' : 'stable'),
        resolve: (ref: string | number) => publicChains.find((c) => c.id === String(ref).toLowerCase() || c.chainId === Number(ref)),
      },
    },
  } as unknown as ToolContext;

  const tool = (name: string): AnyTool => [...schemaTools, ...featureTools].find((t) => t.name === name)!;

  /** What the gateway does: validate input, run the handler, shape output by the declared schema. */
  async function call(name: string, input: unknown) {
    const t = tool(name);
    const output = await t.handler(t.input.parse(input), ctx);
    const shaped = t.output.safeParse(output);
    expect(shaped.success, shaped.success ? '' : JSON.stringify(shaped.error.issues.slice(0, 3))).toBe(true);
    return shaped.data as Record<string, any>;
  }

  it('declares the documented bindings', () => {
    expect(tool('list_action_schemas')).toMatchObject({
      scope: 'public',
      rest: { method: 'GET', path: '/api/mcp/schemas', cacheControl: 'public, max-age=300' },
      mcp: { annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false } },
    });
    expect(tool('get_plugin')).toMatchObject({ scope: 'public', rest: { method: 'GET', path: '/api/mcp/schemas/:pluginType' } });
    expect(tool('search_protocol_actions')).toMatchObject({ scope: 'public', rest: { method: 'GET', path: '/api/mcp/protocol-actions' } });
    expect(tool('get_features')).toMatchObject({
      scope: 'mcp:read',
      rest: { method: 'GET', path: '/api/features' },
      mcp: { annotations: { readOnlyHint: true } },
    });
  });

  it('list_action_schemas returns the full document, keeps it through its output schema, and filters', async () => {
    const full = await call('list_action_schemas', {});
    expect(full).toEqual(
      JSON.parse(
        JSON.stringify(
          buildSchemaDocument([
            { chainId: 8453, name: 'Base', chainType: 'evm', isTestnet: false, status: 'stable' },
            { chainId: 999, name: 'HyperEVM', chainType: 'evm', isTestnet: false, status: 'experimental' },
          ]),
        ),
      ),
    );
    const noChains = await call('list_action_schemas', { includeChains: 'false', category: 'NOTIFICATIONS' });
    expect(noChains).not.toHaveProperty('chains');
    expect(Object.keys(noChains.actions)).toContain('slack/send-message');
    expect(Object.keys(noChains.actions)).not.toContain('Condition');
  });

  it('get_plugin returns a plugin, or the plugin of a full actionType, and 404s with a suggestion', async () => {
    const aave = await call('get_plugin', { pluginType: 'aave-v3' });
    expect(Object.keys(aave.actions)).toHaveLength(5);
    expect(aave.actions['aave-v3/supply'].protocol.addresses['8453']).toBe('0xA238Dd80C259a72e81d7e4664a9801593F98d1c5');
    const one = await call('get_plugin', { pluginType: 'web3/write-contract' });
    expect(one.pluginType).toBe('web3');
    expect(one.action.actionType).toBe('web3/write-contract');
    const system = await call('get_plugin', { pluginType: 'system' });
    expect(Object.keys(system.actions)).toContain('For Each');
    await expect(async () => tool('get_plugin').handler({ pluginType: 'discrod' }, ctx)).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
      details: { suggestion: 'discord' },
    });
  });

  it('search_protocol_actions resolves chain names through the catalog', async () => {
    const out = await call('search_protocol_actions', { query: 'withdraw on base' });
    expect(out.chainIds).toEqual([8453]);
    expect(out.results[0].actionType).toBe('aave-v3/withdraw');
    expect(out.count).toBe(out.results.length);
    const none = await call('search_protocol_actions', { query: 'nft marketplace' });
    expect(none.count).toBe(0);
    expect(none.hint).toContain('aave-v3');
  });

  it('get_features returns the snapshot', async () => {
    expect(await call('get_features', {})).toEqual(buildFeatureSnapshot());
  });
});
