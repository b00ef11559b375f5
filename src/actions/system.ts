import { T, hint } from './fields.ts';
import type { SystemActionSpec } from './types.ts';

/** Built-in control-flow actions. Keys are Pascal case with spaces and never carry `requiresCredentials`. */

export const CONDITION_OPERATORS = [
  '==',
  '===',
  '!=',
  '!==',
  '>',
  '>=',
  '<',
  '<=',
  'contains',
  'startsWith',
  'endsWith',
  'matchesRegex',
  'isEmpty',
  'isNotEmpty',
  'exists',
  'doesNotExist',
] as const;

export const systemActions: readonly SystemActionSpec[] = [
  {
    actionType: 'Condition',
    label: 'Condition',
    description: 'Branches the workflow on a boolean expression. Connect the next nodes with edges whose sourceHandle is "true" or "false".',
    category: 'System',
    integration: null,
    requiredFields: {
      condition: `string (boolean expression over upstream values, e.g. "{{@balance:Check Balance.balance}} > 0.1"; supports ${T} templates)`,
    },
    optionalFields: {
      conditionConfig: 'object (structured rules: {group:{logic:"AND"|"OR", rules:[{leftOperand, operator, rightOperand}]}}; operators as listed in operators)',
    },
    outputFields: { result: 'boolean (which handle was taken)' },
    sourceHandles: ['true', 'false'],
    operators: CONDITION_OPERATORS,
    featureId: 'workflow-control',
    exampleConfig: { actionType: 'Condition', condition: '{{@balance:Check Balance.balance}} > 0.1' },
  },
  {
    actionType: 'HTTP Request',
    label: 'HTTP Request',
    description: 'Calls an external HTTP endpoint and returns its status, parsed body and headers.',
    category: 'System',
    integration: null,
    requiredFields: {
      endpoint: hint.templated('http(s) URL'),
      httpMethod: 'string (GET | POST | PUT | PATCH | DELETE)',
    },
    optionalFields: {
      httpHeaders: 'string (JSON object of header names to values)',
      httpBody: hint.templated('request body, usually JSON text'),
      timeout: 'number (ms; default 10000, at most 30000)',
    },
    outputFields: {
      status: 'number (HTTP status code)',
      data: 'object | string (parsed JSON body, or the raw text)',
      headers: 'object (response headers)',
    },
    featureId: 'workflow-control',
    exampleConfig: { actionType: 'HTTP Request', endpoint: 'https://api.example.com/price', httpMethod: 'GET' },
  },
  {
    actionType: 'Database Query',
    label: 'Database Query',
    description: 'Runs a SQL query against a database integration and returns the rows.',
    category: 'System',
    integration: null,
    requiredFields: {
      integrationId: hint.integrationId('database'),
      dbQuery: hint.templated('SQL statement'),
    },
    optionalFields: {},
    outputFields: {
      rows: 'array (result rows as objects keyed by column)',
      rowCount: 'number',
    },
    featureId: 'database-query',
  },
  {
    actionType: 'For Each',
    label: 'For Each',
    description:
      'Runs the nodes between it and the next Collect once per array item. Body nodes read the item through currentItem, index and totalItems of this node.',
    category: 'System',
    integration: null,
    requiredFields: {
      arraySource: `string (template resolving to an array, e.g. "{{@fetch:HTTP Request.data.items}}")`,
    },
    optionalFields: {
      maxIterations: 'number (upper bound on iterations)',
      mapExpression: 'string (path read from each item before the body runs, e.g. "address")',
      concurrency: 'string (sequential | parallel | custom; default sequential)',
      concurrencyLimit: 'number (parallel iterations when concurrency is custom)',
    },
    outputFields: {
      currentItem: 'any (the item of the running iteration)',
      index: 'number (0-based iteration index)',
      totalItems: 'number',
    },
    featureId: 'workflow-control',
    exampleConfig: { actionType: 'For Each', arraySource: '{{@fetch:HTTP Request.data.items}}', concurrency: 'sequential' },
  },
  {
    actionType: 'Collect',
    label: 'Collect',
    description: 'Closes a For Each body and gathers one result per iteration for the nodes after the loop.',
    category: 'System',
    integration: null,
    requiredFields: {},
    optionalFields: {},
    outputFields: {
      results: 'array (one entry per iteration: the output of the last body node)',
      count: 'number',
    },
    featureId: 'workflow-control',
  },
];
