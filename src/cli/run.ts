import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { connect, type GatewayClient } from './gateway-client.ts';
import { nodeLine, outcomeLines, type ExecutionLogs, type NodeLog } from './executions.ts';
import { UsageError } from './usage.ts';

/**
 * `flowgate run <workflowId> [--input JSON] [--watch] [--url URL]`:
 * execute_workflow over REST; with --watch, follows get_execution_status and
 * prints each node's status change as it is seen.
 */

const MIN_POLL_MS = 250;

interface StatusAnswer {
  status: string;
  nodeStatuses: { nodeId: string; status: string }[];
  pollIntervalHint: number;
}

function parseInput(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--input must be a JSON object, such as '{"amount": 5}' (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(
      `--input must be a JSON object, such as '{"amount": 5}' (got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value})`,
    );
  }
  return value as Record<string, unknown>;
}

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { input: { type: 'string' }, watch: { type: 'boolean' }, url: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new UsageError('run needs exactly one WORKFLOW_ID, e.g. flowgate run wf_abc --input \'{"x": 1}\' --watch');
  const input = parseInput(values.input);
  const client = connect(values);
  const { body } = await client.call<{ executionId: string }>('execute_workflow', { workflowId: positionals[0]! }, { input });
  if (!values.watch) {
    console.log(body.executionId);
    return 0;
  }
  console.log(`Execution ${body.executionId} of workflow ${positionals[0]} started`);
  // The run belongs to the gateway: Ctrl-C ends the watching only, and says how to pick it up again.
  const stopWatching = () => {
    console.error(`\nStopped watching; execution ${body.executionId} goes on. See it with: flowgate executions logs ${body.executionId}`);
    process.exit(130);
  };
  process.once('SIGINT', stopWatching);
  try {
    return await watch(client, body.executionId);
  } finally {
    process.off('SIGINT', stopWatching);
  }
}

/** The log a node's status comes from: its latest non-iteration row, else its latest (as the status route decides). */
function latestLog(logs: readonly NodeLog[], nodeId: string): { log: NodeLog; age: number } | undefined {
  let index = logs.findIndex((l) => l.nodeId === nodeId && l.iterationIndex === null);
  if (index < 0) index = logs.findIndex((l) => l.nodeId === nodeId);
  return index < 0 ? undefined : { log: logs[index]!, age: index };
}

/** Polls until the run is terminal; exit code 0 only for `success`. */
async function watch(client: GatewayClient, executionId: string): Promise<number> {
  const shown = new Map<string, string>();
  for (;;) {
    const { body: status, headers } = await client.call<StatusAnswer>('get_execution_status', { executionId });
    const changed = status.nodeStatuses.filter((n) => n.status !== (shown.get(n.nodeId) ?? 'pending'));
    if (changed.length > 0) {
      const { body } = await client.call<ExecutionLogs>('get_execution_logs', { executionId });
      // Several changes seen at once are printed in the order the nodes ran (the logs are newest first).
      const lines = changed.map((n) => ({ node: n, found: latestLog(body.logs, n.nodeId) })).sort((a, b) => (b.found?.age ?? -1) - (a.found?.age ?? -1));
      for (const { node, found } of lines) {
        const log = found?.log ?? { nodeId: node.nodeId, nodeName: null, duration: null, error: null, iterationIndex: null, forEachNodeId: null };
        // The duration and error belong to the status seen, not to a row written since.
        const settled = found?.log.status === node.status;
        console.log(
          `  ${nodeLine({ ...log, status: node.status, duration: settled ? log.duration : null, error: settled ? log.error : null, iterationIndex: null })}`,
        );
        shown.set(node.nodeId, node.status);
      }
    }
    const hint = Number(headers.get('x-poll-interval-hint') ?? status.pollIntervalHint);
    if (hint === 0) {
      const { body } = await client.call<ExecutionLogs>('get_execution_logs', { executionId });
      for (const line of outcomeLines(body.execution)) console.log(line);
      return body.execution.status === 'success' ? 0 : 1;
    }
    await sleep(Math.max(MIN_POLL_MS, Number.isFinite(hint) ? hint * 1000 : 1000));
  }
}
