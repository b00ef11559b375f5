import { z } from 'zod';
import { QUOTA_VARIABLES, type QuotaName } from '../src/config.ts';
import { quotaUsage } from '../src/org/quotas.ts';
import { runDataToday } from '../src/engine/run-data-budget.ts';
import { waitingRuns } from '../src/engine/run-queue.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/**
 * What the organization holds and has used against each bound of the
 * deployment, so a tenant sees a limit coming instead of meeting it as a
 * 409 or 429: stored objects (src/org/quotas.ts), today's run data, the runs
 * waiting for a slot, and how long run data and audit rows are kept.
 */

const bound = z.object({ used: z.number().int(), limit: z.number().int(), variable: z.string() });

const getUsage = defineTool({
  name: 'get_usage',
  title: 'Usage against limits',
  description:
    "The organization's usage against this deployment's limits (stored objects, today's run data, waiting runs, skipped triggered runs) and retention. Past a quota: 409 quota_exceeded; past run data or waiting runs: 429.",
  scope: 'mcp:read',
  input: z.object({}),
  output: z.object({
    quotas: z
      .array(bound.extend({ resource: z.enum(Object.keys(QUOTA_VARIABLES) as [QuotaName, ...QuotaName[]]), label: z.string() }))
      .describe('Stored objects'),
    runData: bound.extend({ resetsAt: z.string() }).describe('Bytes written today (UTC); the budget starts again at resetsAt'),
    waitingRuns: bound.describe('Runs waiting for a slot, counted up to the limit'),
    skippedRuns: bound.describe('Triggered runs written skipped today (UTC); past the limit later ones leave no run'),
    retention: z.object({ runDataDays: z.number().int().nullable(), auditLogDays: z.number().int().nullable() }).describe('Days kept; null: for ever'),
  }),
  rest: { method: 'GET', path: '/api/organization/usage' },
  // REST only: a full organization's tools/list is held under its 40 KB context budget (test/context-budget.test.ts), and
  // over MCP every refusal already names the limit, its variable and how to make room.
  mcp: false,
  async handler(_input, ctx) {
    const { organizationId } = requirePrincipal(ctx);
    const { store, config } = ctx.services;
    const [quotas, runData, waiting] = await Promise.all([
      quotaUsage(store, organizationId, config.quotas),
      runDataToday(store, organizationId),
      waitingRuns(store, organizationId, config.engine.maxQueuedPerOrg),
    ]);
    return {
      quotas,
      runData: {
        used: runData.used,
        limit: config.engine.runDataPerOrgPerDayBytes,
        variable: 'FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES',
        resetsAt: runData.resetsAt,
      },
      waitingRuns: { used: waiting, limit: config.engine.maxQueuedPerOrg, variable: 'FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG' },
      skippedRuns: {
        used: Math.min(runData.skippedRuns, config.engine.maxSkippedRunsPerOrgPerDay),
        limit: config.engine.maxSkippedRunsPerOrgPerDay,
        variable: 'FLOWGATE_MAX_SKIPPED_RUNS_PER_ORG_PER_DAY',
      },
      retention: { runDataDays: config.engine.runDataRetentionDays ?? null, auditLogDays: config.auditLogRetentionDays ?? null },
    };
  },
});

export const usageTools = [getUsage];
