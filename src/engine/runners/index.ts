import type { NodeRunner } from './types.ts';
import { conditionRunner } from './condition.ts';
import { runCodeRunner } from './run-code.ts';
import { mathAggregateRunner } from './math-aggregate.ts';
import { httpRequestRunner } from './http-request.ts';
import { sendWebhookRunner } from './send-webhook.ts';
import { databaseQueryRunner } from './database-query.ts';
import { notificationRunners } from './notifications.ts';
import { web3Runners } from './web3/index.ts';

/**
 * Which code runs each actionType. `For Each` and `Collect` are handled by the
 * executor itself; web3 and protocol steps come from ./web3 (one table shared
 * with POST /api/execute/node). An action of the registry without a runner
 * declares `runnable: false` there, which keeps it out of saved workflows;
 * test/action-runners.test.ts checks the two lists against each other.
 */
/** Actions the executor runs itself (they steer other nodes), so they have no runner of their own. */
export const EXECUTOR_ACTIONS: ReadonlySet<string> = new Set(['For Each', 'Collect']);

export const builtInRunners: Readonly<Record<string, NodeRunner>> = {
  Condition: conditionRunner,
  'code/run-code': runCodeRunner,
  'math/aggregate': mathAggregateRunner,
  'HTTP Request': httpRequestRunner,
  'webhook/send-webhook': sendWebhookRunner,
  'Database Query': databaseQueryRunner,
  ...web3Runners,
  ...notificationRunners,
};
