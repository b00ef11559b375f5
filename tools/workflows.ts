import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { mintSecret } from '../src/auth/secret-keys.ts';
import { rateLimitedError } from '../src/guards/rate-limit.ts';
import { edgesInputSchema, nodesInputSchema } from '../src/engine/graph.ts';
import { assertValidGraph } from '../src/engine/validate.ts';
import { defaultGraph } from '../src/engine/normalize.ts';
import { getWorkflow } from '../src/engine/workflows.ts';
import { listWorkflows } from '../src/engine/workflow-list.ts';
import { generateWorkflowCode } from '../src/engine/workflow-code.ts';
import {
  CLAIM_TOKEN_PREFIX,
  claimWorkflow,
  createWorkflow,
  deleteWorkflow,
  duplicateWorkflow,
  updateWorkflow,
  type WorkflowOwner,
} from '../src/engine/workflow-writes.ts';
import { syncTriggers } from '../src/engine/trigger-sync.ts';
import { goLive, MAX_PUBLIC_TAGS, publicGraph, viewWorkflow } from '../src/engine/public-workflows.ts';
import { assertEnabledWhileListed, assertGraphKeepsListing } from '../src/catalog/publish.ts';
import { defineTool, type Principal, READ_ONLY_LOCAL, type ToolContext } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { booleanish } from './inputs.ts';
import {
  decimalWholeNumber,
  invalidFieldSchema,
  publicTagRefSchema,
  workflowDescription,
  workflowIdParam,
  workflowName,
  workflowSchema,
} from './workflow-schemas.ts';

/** Workflow definitions: CRUD, duplicate, download, code, claim and go-live. */

/** The caller's organization as the owner of a new workflow, with the deployment's bound on how many it may hold. */
const owner = (principal: Principal, ctx: ToolContext): WorkflowOwner => ({
  organizationId: principal.organizationId,
  userId: principal.userId,
  maxWorkflows: ctx.quotas?.workflows,
});

const writeAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
const readAnnotations = READ_ONLY_LOCAL;

const redactedPaths = z
  .array(z.string())
  .describe(
    'Fields shown as [REDACTED] to everyone but your organization, by node id and field path, e.g. nodes[id=http1].data.config.httpHeaders.Authorization, nodes[id=http1].data.config.endpoint?api_key (a query parameter) or nodes[id=http1].data.config.endpoint@userinfo.',
  );

export const listWorkflowsTool = defineTool({
  name: 'list_workflows',
  title: 'List workflows',
  description:
    "The organization's workflows, newest first, filtered by projectId or tagId. Without limit, all; with limit (1-200) and offset, a page (fewer rows than limit: the end). Details: get_workflow.",
  scope: 'mcp:read',
  input: z
    .object({
      projectId: z.string().trim().min(1).optional(),
      tagId: z.string().trim().min(1).optional(),
      limit: decimalWholeNumber('limit', 1, 200).optional(),
      offset: decimalWholeNumber('offset', 0, Number.MAX_SAFE_INTEGER).optional(),
    })
    .refine((q) => q.offset === undefined || q.limit !== undefined, { message: 'offset requires limit', path: ['offset'] }),
  output: z.array(workflowSchema),
  rest: { method: 'GET', path: '/api/workflows' },
  mcp: { annotations: readAnnotations, resultKey: 'workflows' },
  handler: (input, ctx) => listWorkflows(ctx.services.store, requirePrincipal(ctx).organizationId, input),
});

export const getWorkflowTool = defineTool({
  name: 'get_workflow',
  title: 'Get workflow',
  description:
    'One workflow with nodes and edges: yours, or a public one (credentials [REDACTED]). Next: validate_workflow, update_workflow or execute_workflow.',
  scope: 'mcp:read',
  input: z.object({ workflowId: workflowIdParam }),
  output: workflowSchema.extend({ publicTags: z.array(publicTagRefSchema), isOwner: z.boolean() }),
  rest: { method: 'GET', path: '/api/workflows/:workflowId' },
  mcp: { annotations: readAnnotations },
  handler: ({ workflowId }, ctx) => viewWorkflow(ctx.services.store, requirePrincipal(ctx).organizationId, workflowId),
});

const createInput = z.object({
  name: workflowName,
  description: workflowDescription.optional(),
  nodes: nodesInputSchema,
  edges: edgesInputSchema,
  projectId: z.string().trim().min(1).nullable().optional(),
  tagId: z.string().trim().min(1).nullable().optional(),
  enabled: z.boolean().optional(),
});

export const createWorkflowTool = defineTool({
  name: 'create_workflow',
  title: 'Create workflow',
  description:
    'Saves a workflow: one trigger node plus action nodes joined by edges, validated against list_action_schemas (every problem at once in invalidFields, with suggestions). Without a key: anonymous, with a claimToken for claim_workflow.',
  scope: 'mcp:write',
  quotas: ['workflows'],
  rateLimit: 'objectWritesPerOrganization',
  anonymous: true,
  accepts: ['format', 'exportedAt'],
  input: createInput,
  output: workflowSchema.extend({ warnings: z.array(invalidFieldSchema), claimToken: z.string().optional() }),
  rest: { method: 'POST', path: '/api/workflows/create' },
  mcp: { annotations: writeAnnotations },
  deprecations: ['function-name-fields'],
  async handler(input, ctx) {
    if (!ctx.principal) {
      // Spent before validation, the costly part, so a refused graph counts too and one IP cannot validate without limit.
      const decision = await ctx.services.rateLimiter.consume('anonymousWorkflowsPerIp', ctx.ip);
      if (!decision.allowed) throw rateLimitedError('anonymousWorkflowsPerIp', decision, 'or authenticate with an API key, which this limit does not apply to');
    }
    const { graph, warnings } =
      input.nodes.length === 0 && input.edges.length === 0 ? { graph: defaultGraph(), warnings: [] } : assertValidGraph(input, { chains: ctx.services.chains });
    const fields = { name: input.name, description: input.description, graph, projectId: input.projectId, tagId: input.tagId, enabled: input.enabled };
    if (ctx.principal) {
      const created = await createWorkflow(ctx.services.store, owner(ctx.principal, ctx), fields);
      await syncTriggers(ctx.services, created);
      return { ...created, warnings };
    }
    const claim = mintSecret(CLAIM_TOKEN_PREFIX);
    const anonymous = { claimTokenHash: claim.hash, maxUnclaimed: ctx.services.config.maxUnclaimedWorkflows };
    return { ...(await createWorkflow(ctx.services.store, null, fields, anonymous)), warnings, claimToken: claim.key };
  },
});

export const updateWorkflowTool = defineTool({
  name: 'update_workflow',
  title: 'Update workflow',
  description:
    'Changes the fields you send; nodes or edges re-validate the whole graph and a refused update changes nothing. null projectId or tagId unassigns. A public workflow answers with redactedPaths.',
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({
    workflowId: workflowIdParam,
    name: workflowName.optional(),
    description: workflowDescription.optional(),
    nodes: nodesInputSchema.optional(),
    edges: edgesInputSchema.optional(),
    projectId: z.string().trim().min(1).nullable().optional(),
    tagId: z.string().trim().min(1).nullable().optional(),
    enabled: z.boolean().optional(),
    visibility: z.enum(['private', 'public']).optional(),
  }),
  output: workflowSchema.extend({ warnings: z.array(invalidFieldSchema), redactedPaths: redactedPaths.optional() }),
  rest: { method: 'PATCH', path: '/api/workflows/:workflowId', errors: ['conflict'] },
  mcp: { annotations: { ...writeAnnotations, idempotentHint: true } },
  deprecations: ['function-name-fields'],
  quotas: ['publicWorkflows'],
  async handler({ workflowId, nodes, edges, ...fields }, ctx) {
    const { organizationId } = requirePrincipal(ctx);
    if (nodes === undefined && edges === undefined && Object.values(fields).every((v) => v === undefined)) {
      throw new ServiceError(
        400,
        'invalid_input',
        'Nothing to update: send at least one of name, description, nodes, edges, projectId, tagId, enabled, visibility.',
      );
    }
    let checked: ReturnType<typeof assertValidGraph> | undefined;
    if (nodes !== undefined || edges !== undefined) {
      const stored = await getWorkflow(ctx.services.store, organizationId, workflowId);
      checked = assertValidGraph({ nodes: nodes ?? stored.nodes, edges: edges ?? stored.edges }, { chains: ctx.services.chains });
    }
    const graph = checked?.graph;
    const updated = await updateWorkflow(ctx.services.store, organizationId, workflowId, {
      ...fields,
      graph,
      publicQuota: ctx.quotas?.publicWorkflows,
      // In the update's transaction, against a listing published at the same moment.
      guard: async (trx) => {
        if (fields.enabled === false) await assertEnabledWhileListed(trx, organizationId, workflowId);
        if (graph) await assertGraphKeepsListing(trx, workflowId, graph.nodes);
      },
    });
    await syncTriggers(ctx.services, updated);
    // A public workflow tells its owner what the public sees, as go-live does.
    return { ...updated, warnings: checked?.warnings ?? [], ...(updated.visibility === 'public' ? { redactedPaths: publicGraph(updated.nodes).paths } : {}) };
  },
});

export const deleteWorkflowTool = defineTool({
  name: 'delete_workflow',
  title: 'Delete workflow',
  description:
    'Deletes a workflow. A workflow with execution history answers 409 unless force=true, which also deletes its runs and logs. This cannot be undone.',
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ workflowId: workflowIdParam, force: booleanish.optional() }),
  output: z.object({ success: z.literal(true), id: z.string(), deletedExecutions: z.number() }),
  rest: { method: 'DELETE', path: '/api/workflows/:workflowId', errors: ['conflict'] },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } },
  async handler({ workflowId, force }, ctx) {
    const { deletedExecutions } = await deleteWorkflow(ctx.services.store, requirePrincipal(ctx).organizationId, workflowId, force === true);
    return { success: true as const, id: workflowId, deletedExecutions };
  },
});

export const duplicateWorkflowTool = defineTool({
  name: 'duplicate_workflow',
  title: 'Duplicate workflow',
  description: 'Copies a workflow of your organization (nodes, edges, project, tag) as a new private workflow named "<name> (copy)". Returns the copy.',
  scope: 'mcp:write',
  quotas: ['workflows'],
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ workflowId: workflowIdParam }),
  output: workflowSchema,
  rest: { method: 'POST', path: '/api/workflows/:workflowId/duplicate', status: 201 },
  mcp: { annotations: writeAnnotations },
  async handler({ workflowId }, ctx) {
    const copy = await duplicateWorkflow(ctx.services.store, owner(requirePrincipal(ctx), ctx), workflowId);
    await syncTriggers(ctx.services, copy);
    return copy;
  },
});

export const PORTABLE_FORMAT = 'flowgate.workflow/v1' as const;

export const downloadWorkflowTool = defineTool({
  name: 'download_workflow',
  title: 'Download workflow',
  description: 'The workflow definition as portable JSON; POST it unchanged to /api/workflows/create (or create_workflow) to recreate it anywhere.',
  scope: 'mcp:read',
  input: z.object({ workflowId: workflowIdParam }),
  output: z.object({
    format: z.literal(PORTABLE_FORMAT),
    name: z.string(),
    description: z.string().nullable(),
    nodes: z.array(z.record(z.string(), z.unknown())),
    edges: z.array(z.record(z.string(), z.unknown())),
    enabled: z.boolean(),
    exportedAt: z.string(),
  }),
  rest: { method: 'GET', path: '/api/workflows/:workflowId/download' },
  mcp: false,
  async handler({ workflowId }, ctx) {
    const workflow = await getWorkflow(ctx.services.store, requirePrincipal(ctx).organizationId, workflowId);
    ctx.setHeader('Content-Disposition', `attachment; filename="workflow-${workflow.id}.json"`);
    return {
      format: PORTABLE_FORMAT,
      name: workflow.name,
      description: workflow.description,
      nodes: workflow.nodes,
      edges: workflow.edges,
      enabled: workflow.enabled,
      exportedAt: new Date().toISOString(),
    };
  },
});

export const workflowCodeTool = defineTool({
  name: 'get_workflow_code',
  title: 'Generate workflow code',
  description: "Generated TypeScript (Node 20, no dependencies) that runs this workflow through the gateway's REST API and waits for the result.",
  scope: 'mcp:read',
  input: z.object({ workflowId: workflowIdParam }),
  output: z.object({ language: z.literal('typescript'), filename: z.string(), code: z.string() }),
  rest: { method: 'GET', path: '/api/workflows/:workflowId/code' },
  mcp: { annotations: readAnnotations },
  async handler({ workflowId }, ctx) {
    const workflow = await getWorkflow(ctx.services.store, requirePrincipal(ctx).organizationId, workflowId);
    return generateWorkflowCode(workflow, ctx.services.config.baseUrl);
  },
});

export const claimWorkflowTool = defineTool({
  name: 'claim_workflow',
  title: 'Claim anonymous workflow',
  description:
    'Moves a workflow created anonymously into your organization. Only its original creator may claim it: send the claimToken returned by create_workflow.',
  scope: 'mcp:write',
  quotas: ['workflows'],
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ workflowId: workflowIdParam, claimToken: z.string().trim().min(1, 'claimToken is required') }),
  output: workflowSchema,
  rest: { method: 'POST', path: '/api/workflows/:workflowId/claim', errors: ['not_original_creator', 'already_claimed'] },
  mcp: { annotations: writeAnnotations },
  async handler({ workflowId, claimToken }, ctx) {
    const claimed = await claimWorkflow(ctx.services.store, owner(requirePrincipal(ctx), ctx), workflowId, claimToken);
    await syncTriggers(ctx.services, claimed);
    return claimed;
  },
});

export const goLiveTool = defineTool({
  name: 'go_live_workflow',
  title: 'Publish workflow (go live)',
  description: `Makes a workflow public (search_workflows, GET /api/workflows/public) with a public name and up to ${MAX_PUBLIC_TAGS} public tag ids from list_public_tags. Credentials typed into nodes are redacted for others; redactedPaths lists each one.`,
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({
    workflowId: workflowIdParam,
    name: workflowName,
    publicTagIds: z.array(z.string().trim().min(1)).max(MAX_PUBLIC_TAGS, `at most ${MAX_PUBLIC_TAGS} public tags`).optional(),
  }),
  output: workflowSchema.extend({
    publicTags: z.array(publicTagRefSchema),
    isOwner: z.boolean(),
    redactedPaths,
  }),
  rest: { method: 'PUT', path: '/api/workflows/:workflowId/go-live' },
  mcp: { annotations: { ...writeAnnotations, idempotentHint: true } },
  quotas: ['publicWorkflows'],
  handler: ({ workflowId, name, publicTagIds }, ctx) =>
    goLive(ctx.services.store, requirePrincipal(ctx).organizationId, workflowId, {
      name,
      publicTagIds: publicTagIds ?? [],
      publicQuota: ctx.quotas?.publicWorkflows,
    }),
});

export const workflowTools = [
  listWorkflowsTool,
  getWorkflowTool,
  createWorkflowTool,
  updateWorkflowTool,
  deleteWorkflowTool,
  duplicateWorkflowTool,
  downloadWorkflowTool,
  workflowCodeTool,
  claimWorkflowTool,
  goLiveTool,
];
