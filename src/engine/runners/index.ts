import type { NodeRunner } from './types.ts';
import { conditionRunner } from './condition.ts';
import { runCodeRunner } from './run-code.ts';
import { mathAggregateRunner } from './math-aggregate.ts';
import { httpRequestRunner } from './http-request.ts';
import { sendWebhookRunner } from './send-webhook.ts';
import { databaseQueryRunner } from './database-query.ts';

/**
 * Which code runs each actionType. `For Each` and `Collect` are handled by the
 * executor itself; web3 and protocol steps register here with direct
 * execution; an action without a runner fails its node with a clear message.
 */
export const builtInRunners: Readonly<Record<string, NodeRunner>> = {
  Condition: conditionRunner,
  'code/run-code': runCodeRunner,
  'math/aggregate': mathAggregateRunner,
  'HTTP Request': httpRequestRunner,
  'webhook/send-webhook': sendWebhookRunner,
  'Database Query': databaseQueryRunner,
};
