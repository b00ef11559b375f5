import { z } from 'zod';
import { networks, networksSchema, summary, summarySchema, timeSeries, timeSeriesSchema } from '../src/analytics/aggregates.ts';
import { rangeFields, rangeInput, resolveWindow } from '../src/analytics/range.ts';
import { listRuns, runsPageSchema } from '../src/analytics/runs.ts';
import { STATUS_FILTERS } from '../src/analytics/statuses.ts';
import { runSteps, stepsSchema } from '../src/analytics/steps.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { pageLimit } from './inputs.ts';

/**
 * SPEC "Analytics": totals, a time series, networks and one list of runs
 * across workflows and direct executions, a run's steps, and the live
 * stream. Summary, time-series, networks and runs take an mcp:read key
 * (SPEC Authentication rule 2); steps and the stream are session-only
 * (rule 3). The spend-cap route of this group is get_spending_limits
 * (tools/execute.ts).
 */

const organizationOf = (ctx: Parameters<typeof requirePrincipal>[0]) => requirePrincipal(ctx).organizationId;

const summaryTool = defineTool({
  name: 'get_analytics_summary',
  title: 'Totals',
  description: 'Totals of all runs: success rate and gas.',
  input: rangeInput,
  output: summarySchema,
  scope: 'mcp:read',
  rest: { method: 'GET', path: '/api/analytics/summary' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler: (input, ctx) => summary(ctx.services.store, organizationOf(ctx), resolveWindow(input)),
});

const timeSeriesTool = defineTool({
  name: 'get_analytics_time_series',
  title: 'Runs over time',
  description:
    'Runs, successes and failures per time bucket (hourly for 24h, 6-hourly for 7d, daily for 30d and 90d), every bucket of the range, oldest first.',
  input: rangeInput,
  output: timeSeriesSchema,
  scope: 'mcp:read',
  rest: { method: 'GET', path: '/api/analytics/time-series' },
  mcp: false,
  handler: (input, ctx) => timeSeries(ctx.services.store, organizationOf(ctx), resolveWindow(input)),
});

const networksTool = defineTool({
  name: 'get_analytics_networks',
  title: 'Runs and gas per network',
  description: 'Runs and gas per chain, direct executions by their chain and workflow runs by the chains of their transactions; most gas first.',
  input: rangeInput,
  output: networksSchema,
  scope: 'mcp:read',
  rest: { method: 'GET', path: '/api/analytics/networks' },
  mcp: false,
  handler: (input, ctx) => networks(ctx.services.store, ctx.services.chains, organizationOf(ctx), resolveWindow(input)),
});

const runsTool = defineTool({
  name: 'list_runs',
  title: 'Runs',
  description: 'Every run, newest first; page: nextCursor.',
  input: z.object({
    ...rangeFields,
    status: z.enum(STATUS_FILTERS).optional(),
    source: z.enum(['workflow', 'direct']).optional(),
    limit: pageLimit(200, 50),
    cursor: z
      .string()
      .refine((v) => v.length <= 400, 'at most 400 characters')
      .optional(),
  }),
  output: runsPageSchema,
  scope: 'mcp:read',
  rest: { method: 'GET', path: '/api/analytics/runs' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler: ({ status, source, limit, cursor, ...range }, ctx) =>
    listRuns(ctx.services.store, ctx.services.chains, organizationOf(ctx), resolveWindow(range), { status, source, limit, cursor }),
});

const stepsTool = defineTool({
  name: 'get_run_steps',
  title: 'Run steps',
  description: "A run's steps in order: input and output (redacted), status, duration, error. Signed-in sessions only.",
  input: z.object({ executionId: z.string().trim().min(1).max(64) }),
  output: stepsSchema,
  scope: 'session',
  rest: { method: 'GET', path: '/api/analytics/runs/:executionId/steps' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler: ({ executionId }, ctx) => runSteps(ctx.services.store, organizationOf(ctx), executionId),
});

/** SPEC Events 1: the edge sends this event when it changed, checking every 2 s, with a heartbeat between. */
const streamTool = defineTool({
  name: 'stream_analytics',
  title: 'Live run totals (server-sent events)',
  description:
    "text/event-stream of `data: {type:'summary', data}` events (the summary), sent at once and then whenever it changes (checked when a run ends on any instance, and every 2 s), each with an `id:`; a reconnect with Last-Event-ID gets nothing until something changed. A `: heartbeat` comment keeps idle connections open. Signed-in sessions only.",
  input: rangeInput,
  output: z.object({ type: z.literal('summary'), data: summarySchema }),
  scope: 'session',
  rest: { method: 'GET', path: '/api/analytics/stream', eventStream: { intervalMs: 2_000, heartbeatMs: 10_000, wakeOnRunEnd: true } },
  mcp: false,
  handler: async (input, ctx) => ({ type: 'summary' as const, data: await summary(ctx.services.store, organizationOf(ctx), resolveWindow(input)) }),
});

export const analyticsTools = [summaryTool, timeSeriesTool, networksTool, runsTool, stepsTool, streamTool];
