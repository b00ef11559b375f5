import { parseArgs } from 'node:util';
import { connect } from './gateway-client.ts';
import { duration, json, oneLine } from './format.ts';
import { UsageError } from './usage.ts';

/** `flowgate executions logs <executionId> [--json] [--url URL]`: get_execution_logs over REST. */

export interface NodeLog {
  nodeId: string;
  nodeName: string | null;
  status: string;
  error: string | null;
  duration: string | null;
  startedAt: string | null;
  iterationIndex: number | null;
  forEachNodeId: string | null;
}

export interface ExecutionLogs {
  execution: {
    executionId: string;
    workflowId: string;
    status: string;
    triggerType: string | null;
    startedAt: string | null;
    duration: string | null;
    output: unknown;
    error: string | null;
  };
  /** Most recent first, as the API answers. */
  logs: NodeLog[];
}

/** One node's line: name [id], status, duration, and the error when it failed. */
export function nodeLine(log: Pick<NodeLog, 'nodeId' | 'nodeName' | 'status' | 'duration' | 'error' | 'iterationIndex' | 'forEachNodeId'>): string {
  const parts = [`${log.nodeName || log.nodeId} [${log.nodeId}]`, log.status];
  const took = duration(log.duration);
  if (took) parts.push(took);
  if (log.iterationIndex !== null) parts.push(`iteration ${log.iterationIndex} of ${log.forEachNodeId ?? 'loop'}`);
  if (log.error) parts.push(`error: ${oneLine(log.error)}`);
  return parts.join('  ');
}

/** The run's outcome: status and duration, then its output or error. */
export function outcomeLines(execution: ExecutionLogs['execution']): string[] {
  const took = duration(execution.duration);
  const lines = [`Execution ${execution.executionId}: ${execution.status}${took ? ` in ${took}` : ''}`];
  if (execution.error) lines.push(`Error: ${oneLine(execution.error, 1000)}`);
  if (execution.output !== null && execution.output !== undefined) lines.push(`Output: ${JSON.stringify(execution.output)}`);
  return lines;
}

export async function executionsLogs(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { json: { type: 'boolean' }, url: { type: 'string' } }, allowPositionals: true, strict: true });
  if (positionals.length !== 1) throw new UsageError('executions logs needs exactly one EXECUTION_ID, e.g. flowgate executions logs 8f3c...');
  const { body } = await connect(values).call<ExecutionLogs>('get_execution_logs', { executionId: positionals[0]! });
  if (values.json) {
    console.log(json(body));
    return 0;
  }
  const { execution } = body;
  console.log(
    `Execution ${execution.executionId} of workflow ${execution.workflowId} (${execution.triggerType ?? 'unknown'} trigger), started ${execution.startedAt ?? 'not yet'}`,
  );
  // Oldest first, the order they ran in.
  for (const log of [...body.logs].reverse()) console.log(`  ${log.startedAt ?? '-'}  ${nodeLine(log)}`);
  if (body.logs.length === 0) console.log('  (no node has run yet)');
  for (const line of outcomeLines(execution)) console.log(line);
  return 0;
}
