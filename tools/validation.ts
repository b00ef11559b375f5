import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { DEFAULT_TIMEZONE, parseCron } from '../src/engine/cron.ts';
import { edgesInputSchema, nodesInputSchema } from '../src/engine/graph.ts';
import { prepareGraph } from '../src/engine/validate.ts';
import { getWorkflow } from '../src/engine/workflows.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { decimalWholeNumber, invalidFieldSchema, workflowIdParam } from './workflow-schemas.ts';

/** Checking workflows and cron expressions without saving anything. */

const readOnly = { annotations: READ_ONLY_LOCAL } as const;

const validateWorkflow = defineTool({
  name: 'validate_workflow',
  title: 'Validate a workflow',
  description: [
    'Checks a stored workflow (workflowId) or a draft (nodes, edges) without saving (trigger, fields, cron, edges, cycles, templates).',
    'Returns every error (blocks saving) and warning with nodeId, path and suggestion. Fix, validate again, then create_workflow or update_workflow.',
  ].join(' '),
  input: z.object({
    workflowId: workflowIdParam.optional().describe('A stored workflow to validate'),
    nodes: nodesInputSchema.optional().describe('Or a draft: nodes'),
    edges: edgesInputSchema.optional().describe('Draft edges (default none)'),
  }),
  output: z.object({
    valid: z.boolean().describe('True when there are no errors; warnings do not count'),
    nodeCount: z.number().int(),
    errors: z.array(invalidFieldSchema),
    warnings: z.array(invalidFieldSchema),
  }),
  scope: 'mcp:read',
  rest: { method: 'POST', path: '/api/workflows/validate' },
  mcp: readOnly,
  deprecations: ['function-name-fields'],
  async handler(input, ctx) {
    const draft = input.nodes !== undefined || input.edges !== undefined;
    if (input.workflowId !== undefined && draft) {
      throw new ServiceError(400, 'invalid_input', 'Send either workflowId (validate a stored workflow) or nodes and edges (validate a draft), not both.');
    }
    if (input.workflowId === undefined && input.nodes === undefined) {
      throw new ServiceError(
        400,
        'invalid_input',
        input.edges !== undefined
          ? 'edges were sent without nodes: send nodes and edges together, or a workflowId.'
          : 'Send workflowId (a stored workflow) or nodes and edges (a draft) to validate.',
      );
    }
    const graph =
      input.workflowId !== undefined
        ? await getWorkflow(ctx.services.store, requirePrincipal(ctx).organizationId, input.workflowId)
        : { nodes: input.nodes!, edges: input.edges ?? [] };
    return prepareGraph(graph, { chains: ctx.services.chains }).report;
  },
});

const validateCron = defineTool({
  name: 'validate_cron',
  title: 'Validate a cron expression',
  description: [
    'Checks a Schedule cron expression (5 fields, 6 with seconds, or @daily) in a timezone (IANA, as scheduleTimezone) and lists its next run times in UTC, before you save.',
    'Invalid input fails with invalid_cron or invalid_timezone.',
  ].join(' '),
  input: z.object({
    expression: z.string().max(200).describe('Cron expression, e.g. "0 9 * * *"'),
    timezone: z.string().max(100).optional().describe(`IANA time zone; default ${DEFAULT_TIMEZONE}`),
    count: decimalWholeNumber('count', 1, 20).optional().describe('How many next run times to list, 1 to 20 (default 5)'),
  }),
  output: z.object({
    valid: z.literal(true),
    expression: z.string().describe('The expression as it is scheduled (whitespace collapsed)'),
    timezone: z.string().describe('Canonical IANA name of the time zone used'),
    nextRuns: z.array(z.string()).describe('Next run times, ISO 8601 in UTC'),
  }),
  scope: 'public',
  rest: { method: 'POST', path: '/api/workflows/validate-cron' },
  mcp: readOnly,
  handler(input) {
    const parsed = parseCron(input.expression, input.timezone);
    if (!parsed.ok) throw new ServiceError(400, parsed.code, parsed.message, { expression: input.expression, timezone: input.timezone ?? null });
    return {
      valid: true as const,
      expression: parsed.expression,
      timezone: parsed.timezone,
      nextRuns: parsed.nextRuns(input.count ?? 5).map((d) => d.toISOString()),
    };
  },
});

export const validationTools = [validateWorkflow, validateCron];
