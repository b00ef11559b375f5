import { hint } from './fields.ts';
import type { PluginActionSpec } from './types.ts';

/** math/aggregate operation names (with aliases) → the operation run; the runner and validation both read this. */
export const AGGREGATE_OPERATIONS = {
  sum: 'sum',
  total: 'sum',
  average: 'average',
  avg: 'average',
  mean: 'average',
  min: 'min',
  minimum: 'min',
  max: 'max',
  maximum: 'max',
  count: 'count',
  median: 'median',
  product: 'product',
} as const;

/** Actions that compute over upstream values without touching a chain or a provider. */

export const computeActions: readonly PluginActionSpec[] = [
  {
    actionType: 'code/run-code',
    label: 'Run Code',
    description:
      'Runs a JavaScript snippet in a sandbox (no network, no file system, bounded time and memory) and returns its value. Use it for transformations templates cannot express.',
    category: 'Code',
    integration: 'code',
    requiredFields: {
      code: hint.templated('JavaScript function body; `return` a JSON-serializable value'),
    },
    optionalFields: { timeout: 'number (milliseconds before the run is stopped)' },
    outputFields: { result: 'any (the returned value)' },
    requiresCredentials: false,
    featureId: 'code-execution',
    exampleConfig: {
      actionType: 'code/run-code',
      code: 'const balance = Number("{{@balance:Check Balance.balance}}");\nreturn { balance, low: balance < 0.05 };',
    },
  },
  {
    actionType: 'math/aggregate',
    label: 'Aggregate',
    description: 'Reduces a list of numbers (or one numeric property of a list of objects) to a sum, average, minimum, maximum or count.',
    category: 'Math',
    integration: 'math',
    requiredFields: {
      operation: `string (${Object.keys(AGGREGATE_OPERATIONS).join(' | ')})`,
      values: `string (JSON array, or a template resolving to an array, e.g. "{{@loop:Collect.results}}")`,
    },
    optionalFields: { field: 'string (property read from each item when values are objects, e.g. "balance")' },
    outputFields: { result: 'number', count: 'number (items aggregated)' },
    requiresCredentials: false,
    featureId: 'math-aggregate',
  },
];
