import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { getWorkflow } from '../src/engine/workflows.ts';
import { startWorkflowRun } from '../src/engine/run-workflow.ts';
import { assertMatchesWebhookSchema } from '../src/engine/webhook-schema.ts';
import {
  deleteExecutions,
  getExecutionOutcome,
  getExecutionRow,
  isTerminal,
  listExecutions,
  listLogs,
  listLogStatuses,
  pollIntervalHint,
  requestCancel,
  toExecutionRecord,
} from '../src/engine/executions.ts';
import { executionProgress } from '../src/engine/progress.ts';
import type { RunOutcome } from '../src/engine/run-events.ts';
import { truncateLarge, truncateLargeText } from '../src/engine/truncate.ts';
import { storedJson } from '../src/text/json-text.ts';
import { defineTool, type ToolContext, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { decimalWholeNumber, workflowIdParam } from './workflow-schemas.ts';
import { idempotencyKeyArgument } from './inputs.ts';
import { LEGACY_EXECUTE_PATH, LEGACY_EXECUTION_PATH } from './deprecations.ts';

/** Starting runs and following them: execute, webhook, status, wait, logs, cancel. */

const executionIdParam = z.string().trim().min(1, 'executionId is required').max(64);
const txSchema = z.object({
  hash: z.string(),
  nodeId: z.string(),
  nodeName: z.string(),
  chainId: z.number().optional(),
  network: z.string().optional(),
  iterationIndex: z.number().optional(),
  verified: z.boolean().optional(),
  receiptStatus: z.enum(['success', 'reverted', 'safe_inner_failure', 'not_found', 'timeout']).optional(),
  blockNumber: z.number().optional(),
  gasUsed: z.string().optional(),
  verifiedAt: z.string().optional(),
});
const executionSchema = z.object({
  id: z.string(),
  executionId: z.string(),
  workflowId: z.string(),
  userId: z.string().nullable(),
  status: z.string(),
  input: z.record(z.string(), z.unknown()),
  output: z.record(z.string(), z.unknown()).nullable(),
  error: z.string().nullable(),
  errorContext: z.record(z.string(), z.unknown()).nullable(),
  triggerType: z.string().nullable(),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  duration: z.string().nullable(),
  gasUsedWei: z.string().nullable(),
  transactionHashes: z.array(txSchema),
  createdAt: z.string(),
  dataPrunedAt: z
    .string()
    .optional()
    .describe("Present once the deployment's retention removed this run's logs, input, output and graph copy; its status, times, error and transactions stay"),
});
const logSchema = z.object({
  id: z.string(),
  executionId: z.string(),
  nodeId: z.string(),
  nodeName: z.string().nullable(),
  nodeType: z.string().nullable(),
  status: z.string(),
  input: z.unknown(),
  output: z.unknown(),
  error: z.string().nullable(),
  duration: z.string().nullable(),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  iterationIndex: z.number().nullable(),
  forEachNodeId: z.string().nullable(),
});

const started = z.object({ executionId: z.string(), status: z.literal('running'), hint: z.string(), idempotentReplay: z.literal(true).optional() });
const HINT =
  'Follow the run with wait_for_execution (GET /api/workflows/executions/{executionId}/wait) or get_execution; any status other than success means it did not succeed.';

async function execute(workflowId: string, input: Record<string, unknown> | undefined, ctx: ToolContext) {
  const principal = requirePrincipal(ctx);
  const workflow = await getWorkflow(ctx.services.store, principal.organizationId, workflowId);
  const run = await startWorkflowRun(ctx.services, workflow, {
    userId: principal.userId,
    input: input ?? {},
    triggerType: 'Manual',
    idempotencyKey: ctx.idempotencyKey,
  });
  return { executionId: run.executionId, status: 'running' as const, hint: HINT, ...(run.replayed ? { idempotentReplay: true as const } : {}) };
}

const executeInput = z.object({
  workflowId: workflowIdParam,
  input: z.record(z.string(), z.unknown()).optional(),
  idempotency_key: idempotencyKeyArgument,
});

export const executeWorkflowTool = defineTool({
  name: 'execute_workflow',
  title: 'Execute workflow',
  description:
    'Starts a run and answers at once with {executionId, status: "running"}. `input` fields are spread into the trigger output ({{@<triggerId>:<Label>.<field>}}). idempotency_key makes retries safe. Then wait_for_execution.',
  scope: 'mcp:write',
  input: executeInput,
  output: started,
  rest: { method: 'POST', path: '/api/workflows/:workflowId/execute', idempotencyKey: true },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } },
  handler: ({ workflowId, input }, ctx) => execute(workflowId, input, ctx),
});

export const executeWorkflowLegacyTool = defineTool({
  name: 'execute_workflow_legacy_path',
  title: 'Execute workflow (deprecated path)',
  description:
    'Deprecated alias of POST /api/workflows/{workflowId}/execute, kept for backward compatibility; responses carry Deprecation, Sunset and Link headers.',
  scope: 'mcp:write',
  input: executeInput,
  output: started,
  rest: { method: 'POST', path: LEGACY_EXECUTE_PATH },
  mcp: false,
  deprecations: ['legacy-execute-path'],
  handler: ({ workflowId, input }, ctx) => execute(workflowId, input, ctx),
});

export const webhookTriggerTool = defineTool({
  name: 'trigger_webhook',
  title: 'Webhook trigger',
  description:
    'Starts a run of a workflow whose trigger is Webhook. Authenticate with a wfb_ webhook key of a member of the workflow’s organization (or an organization key with mcp:write). The JSON body becomes the trigger’s `body`; `headers`, `method` and `query` ride along. Idempotency-Key is scoped to the workflow.',
  scope: 'webhook',
  input: z.looseObject({ workflowId: workflowIdParam }),
  output: started,
  rest: { method: 'POST', path: '/api/workflows/:workflowId/webhook', idempotencyKey: true },
  mcp: false,
  async handler({ workflowId, ...body }, ctx) {
    const principal = requirePrincipal(ctx);
    const workflow = await getWorkflow(ctx.services.store, principal.organizationId, workflowId);
    const trigger = workflow.nodes.find((n) => n.type === 'trigger');
    if (trigger?.data.config.triggerType !== 'Webhook') {
      throw new ServiceError(
        400,
        'not_a_webhook_workflow',
        `Workflow ${workflowId} has a ${String(trigger?.data.config.triggerType ?? 'missing')} trigger, not Webhook; start it with execute_workflow instead.`,
      );
    }
    if (!workflow.enabled)
      throw new ServiceError(410, 'workflow_disabled', `Workflow ${workflowId} is disabled; enable it (update_workflow enabled=true) to accept webhooks.`);
    assertMatchesWebhookSchema(trigger.data.config.webhookSchema, body);
    const { workflowId: _drop, ...query } = (ctx.request?.query ?? {}) as Record<string, unknown>;
    const input = { body, headers: ctx.request?.headers ?? {}, method: ctx.request?.method ?? 'POST', query };
    const run = await startWorkflowRun(ctx.services, workflow, { userId: principal.userId, input, triggerType: 'Webhook', idempotencyKey: ctx.idempotencyKey });
    return { executionId: run.executionId, status: 'running' as const, hint: HINT, ...(run.replayed ? { idempotentReplay: true as const } : {}) };
  },
});

export const listExecutionsTool = defineTool({
  name: 'list_executions',
  title: 'List executions',
  description: 'The most recent runs of a workflow (newest first, up to 100) with status, input, output, timestamps and transaction hashes.',
  scope: 'mcp:read',
  input: z.object({ workflowId: workflowIdParam }),
  output: z.array(executionSchema),
  rest: { method: 'GET', path: '/api/workflows/:workflowId/executions' },
  mcp: { annotations: READ_ONLY_LOCAL, resultKey: 'executions' },
  async handler({ workflowId }, ctx) {
    const { organizationId } = requirePrincipal(ctx);
    await getWorkflow(ctx.services.store, organizationId, workflowId);
    return listExecutions(ctx.services.store, organizationId, workflowId);
  },
});

export const deleteExecutionsTool = defineTool({
  name: 'delete_executions',
  title: 'Delete execution history',
  description: 'Deletes the finished runs of a workflow and their logs (runs still in progress are kept). Cannot be undone.',
  scope: 'mcp:write',
  input: z.object({ workflowId: workflowIdParam }),
  output: z.object({ success: z.literal(true), deleted: z.number() }),
  rest: { method: 'DELETE', path: '/api/workflows/:workflowId/executions' },
  mcp: false,
  async handler({ workflowId }, ctx) {
    const { organizationId } = requirePrincipal(ctx);
    await getWorkflow(ctx.services.store, organizationId, workflowId);
    return { success: true as const, deleted: await deleteExecutions(ctx.services.store, organizationId, workflowId) };
  },
});

const progressSchema = z.object({
  totalSteps: z.number(),
  completedSteps: z.number(),
  runningSteps: z.number(),
  currentNodeId: z.string().nullable(),
  currentNodeName: z.string().nullable(),
  percentage: z.number(),
});

export const executionStatusTool = defineTool({
  name: 'get_execution_status',
  title: 'Execution status',
  description:
    'Returns at once: status, per-node statuses, progress, errorContext and transaction hashes. The X-Poll-Interval-Hint header (seconds; 0 = terminal) says when to poll again.',
  scope: 'mcp:read',
  input: z.object({ executionId: executionIdParam }),
  output: z.object({
    executionId: z.string(),
    status: z.string(),
    nodeStatuses: z.array(z.object({ nodeId: z.string(), status: z.string() })),
    progress: progressSchema,
    errorContext: z.record(z.string(), z.unknown()).nullable(),
    error: z.string().nullable(),
    transactionHashes: z.array(txSchema),
    pollIntervalHint: z.number(),
  }),
  rest: { method: 'GET', path: '/api/workflows/executions/:executionId/status' },
  mcp: false,
  async handler({ executionId }, ctx) {
    const row = await getExecutionRow(ctx.services.store, requirePrincipal(ctx).organizationId, executionId);
    const record = toExecutionRecord(row);
    const { nodeStatuses, progress } = executionProgress(row, await listLogStatuses(ctx.services.store, executionId));
    const hint = pollIntervalHint(record.status);
    ctx.setHeader('X-Poll-Interval-Hint', String(hint));
    return {
      executionId,
      status: record.status,
      nodeStatuses,
      progress,
      errorContext: record.errorContext,
      error: record.error,
      transactionHashes: record.transactionHashes,
      pollIntervalHint: hint,
    };
  },
});

export const WAIT_DEFAULT_MS = 25_000;
export const WAIT_MAX_MS = 60_000;
/**
 * MCP clients time a request out after 60 s by default (the SDK's client
 * does), so a wait over MCP ends before that and answers completed:false.
 */
export const MCP_WAIT_MAX_MS = 55_000;

/**
 * MCP requires each progress notification of a request to carry a larger
 * `progress` than the last. Completed steps can stand still between
 * keep-alives, so each repeat adds a hundredth (at most 0.99 per step; a wait
 * sends one every 2 s for at most 55 s), keeping `progress/total` honest.
 */
function monotonicProgress() {
  let last = -1;
  return (completedSteps: number): number => {
    const next = completedSteps > last ? completedSteps : Math.round((last + 0.01) * 100) / 100;
    last = next;
    return next;
  };
}

export const waitForExecutionTool = defineTool({
  name: 'wait_for_execution',
  title: 'Wait for execution',
  description: `Blocks until the run reaches a terminal status (success, error, system_error, cancelled) or timeoutMs passes (default ${WAIT_DEFAULT_MS}, max ${WAIT_MAX_MS}; ${MCP_WAIT_MAX_MS} over MCP, below client timeouts); on timeout it answers completed:false with the current status — call it again. Sends MCP progress notifications while waiting.`,
  scope: 'mcp:read',
  input: z.object({ executionId: executionIdParam, timeoutMs: decimalWholeNumber('timeoutMs', 1, WAIT_MAX_MS).optional() }),
  output: z.object({
    executionId: z.string(),
    status: z.string(),
    completed: z.boolean(),
    transactionHashes: z.array(txSchema),
    output: z.record(z.string(), z.unknown()).nullable(),
    error: z.string().nullable(),
    gasUsedWei: z.string().nullable(),
    completedAt: z.string().nullable(),
  }),
  rest: { method: 'GET', path: '/api/workflows/executions/:executionId/wait' },
  mcp: { annotations: READ_ONLY_LOCAL },
  async handler({ executionId, timeoutMs }, ctx) {
    const { organizationId } = requirePrincipal(ctx);
    const { store, engine } = ctx.services;
    const requested = timeoutMs ?? WAIT_DEFAULT_MS;
    const deadline = Date.now() + (ctx.transport === 'mcp' ? Math.min(requested, MCP_WAIT_MAX_MS) : requested);
    const nextProgress = monotonicProgress();
    // Progress needs the full row (graph, current node) and the logs; only a caller that takes notifications pays for them.
    const report = async () => {
      if (!ctx.notifyProgress) return;
      const row = await getExecutionRow(store, organizationId, executionId);
      const { progress } = executionProgress(row, await listLogStatuses(store, executionId));
      ctx.notifyProgress(nextProgress(progress.completedSteps), progress.totalSteps, `${row.status}: ${progress.completedSteps}/${progress.totalSteps} steps`);
    };
    const onStep = ctx.notifyProgress ? () => void report().catch(() => {}) : undefined;
    let outcome: RunOutcome;
    for (;;) {
      // Subscribed before the read, so a run that ends in between still wakes this wait. A run that
      // ends in this process answers from its completion event; one ended on another instance
      // (PostgreSQL: LISTEN/NOTIFY) wakes it to re-read the row; the bounded re-read is a fallback.
      const recheckMs = ctx.services.config.engine.waitRecheckMs;
      const next = engine.events.subscribe(executionId, Math.max(0, Math.min(recheckMs, deadline - Date.now())), onStep);
      try {
        outcome = await getExecutionOutcome(store, organizationId, executionId);
      } catch (error) {
        next.close();
        throw error;
      }
      if (isTerminal(outcome.status) || Date.now() >= deadline) {
        next.close();
        break;
      }
      await report();
      const ended = await next.ended;
      if (ended?.outcome && isTerminal(ended.outcome.status)) {
        outcome = ended.outcome;
        break;
      }
    }
    ctx.setHeader('X-Poll-Interval-Hint', String(pollIntervalHint(outcome.status)));
    return {
      executionId,
      status: outcome.status,
      completed: isTerminal(outcome.status),
      transactionHashes: outcome.transactionHashes,
      output: outcome.output,
      error: outcome.error,
      gasUsedWei: outcome.gasUsedWei,
      completedAt: outcome.completedAt,
    };
  },
});

export const executionLogsTool = defineTool({
  name: 'get_execution_logs',
  title: 'Execution logs',
  description:
    'The execution and its per-node logs (most recent first): resolved input (secrets redacted), output, error, duration, iteration fields for For Each bodies.',
  scope: 'mcp:read',
  input: z.object({ executionId: executionIdParam }),
  output: z.object({ execution: executionSchema, logs: z.array(logSchema) }),
  rest: { method: 'GET', path: '/api/workflows/executions/:executionId/logs' },
  mcp: false,
  async handler({ executionId }, ctx) {
    const row = await getExecutionRow(ctx.services.store, requirePrincipal(ctx).organizationId, executionId);
    // Each step's input and output go out as stored: a run's logs can hold up to its data limit, too much to parse and make again per read.
    return { execution: toExecutionRecord(row), logs: await listLogs(ctx.services.store, executionId, storedJson) };
  },
});

const getExecutionInput = z.object({
  executionId: executionIdParam,
  includeData: z.boolean().optional(),
  nodeIds: z.array(z.string()).max(500).optional(),
  truncateData: z.boolean().optional(),
});
const getExecutionOutput = z.object({
  execution: executionSchema,
  progress: progressSchema,
  completed: z.boolean(),
  pollIntervalHint: z.number(),
  logs: z.array(logSchema),
});

async function getExecution(
  { executionId, includeData, nodeIds, truncateData }: z.output<typeof getExecutionInput>,
  ctx: ToolContext,
): Promise<z.output<typeof getExecutionOutput>> {
  const row = await getExecutionRow(ctx.services.store, requirePrincipal(ctx).organizationId, executionId);
  // Each step's data shaped from its stored text: truncated values (the default) are never parsed whole.
  const allLogs = await listLogs(
    ctx.services.store,
    executionId,
    includeData === false ? () => undefined : truncateData === false ? storedJson : truncateLargeText,
  );
  const { progress } = executionProgress(row, allLogs);
  const wanted = nodeIds ? new Set(nodeIds) : undefined;
  const shape = (value: unknown) => (includeData === false ? undefined : truncateData === false ? value : truncateLarge(value));
  const logs = allLogs.filter((l) => !wanted || wanted.has(l.nodeId));
  const execution = toExecutionRecord(row);
  return {
    execution: { ...execution, output: execution.output && (shape(execution.output) as Record<string, unknown>) },
    progress,
    completed: isTerminal(execution.status),
    pollIntervalHint: pollIntervalHint(execution.status),
    logs,
  };
}

export const getExecutionTool = defineTool({
  name: 'get_execution',
  title: 'Get execution',
  description:
    'Status, progress and per-node logs of a run. includeData=false drops step inputs and outputs, nodeIds picks nodes, truncateData (default true) shortens large values.',
  scope: 'mcp:read',
  input: getExecutionInput,
  output: getExecutionOutput,
  rest: { method: 'GET', path: '/api/workflows/executions/:executionId/details' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler: getExecution,
});

export const getExecutionLegacyTool = defineTool({
  name: 'get_execution_legacy_path',
  title: 'Get execution (deprecated path)',
  description:
    'Deprecated alias of GET /api/workflows/executions/{executionId}/details, kept for backward compatibility; responses carry Deprecation, Sunset and Link headers.',
  scope: 'mcp:read',
  input: getExecutionInput,
  output: getExecutionOutput,
  rest: { method: 'GET', path: LEGACY_EXECUTION_PATH },
  mcp: false,
  deprecations: ['legacy-execution-path'],
  handler: getExecution,
});

export const cancelExecutionTool = defineTool({
  name: 'cancel_execution',
  title: 'Cancel execution',
  description: 'Stops a run: at once if pending, else before its next step (a sending step completes). Returns the status; cancelRequested false: it ended.',
  scope: 'mcp:write',
  input: z.object({ executionId: executionIdParam }),
  output: z.object({ executionId: z.string(), status: z.string(), cancelRequested: z.boolean() }),
  rest: { method: 'POST', path: '/api/workflows/executions/:executionId/cancel' },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } },
  async handler({ executionId }, ctx) {
    const { status, requested } = await requestCancel(
      ctx.services.store,
      requirePrincipal(ctx).organizationId,
      executionId,
      ctx.services.config.engine.runDataPerOrgPerDayBytes,
    );
    // A run of this process stops at its next node boundary without re-reading the flag; one elsewhere reads it with its lease.
    if (!isTerminal(status)) ctx.services.engine.events.cancelRequested(executionId);
    // A run that had already ended is left as it ended: cancelRequested false says so (status is how it ended).
    return { executionId, status, cancelRequested: requested };
  },
});

export const executionTools = [
  executeWorkflowTool,
  executeWorkflowLegacyTool,
  webhookTriggerTool,
  listExecutionsTool,
  deleteExecutionsTool,
  executionStatusTool,
  waitForExecutionTool,
  executionLogsTool,
  getExecutionTool,
  getExecutionLegacyTool,
  cancelExecutionTool,
];
