import { z } from 'zod';
import { callAnswer, callListing, runAnswerSchema, type CallOutcome } from '../src/catalog/call.ts';
import { calldataSchema } from '../src/catalog/calldata.ts';
import { getListing, listingsDerived } from '../src/catalog/listings.ts';
import { deepFreeze } from '../src/immutable.ts';

import { listingView } from '../src/catalog/views.ts';
import { decimalPrice, inputSchemaSchema, listingSlug } from '../src/catalog/entry.ts';
import { publishListing, unlistListing, MAX_OUTPUT_FIELD_NAME, MAX_OUTPUT_FIELDS, MAX_PUBLISHED_PRICE_USD } from '../src/catalog/publish.ts';
import { spendPerIp } from './auth.ts';
import { defineTool, READ_ONLY_LOCAL, type ToolContext } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { decimalWholeNumber, workflowIdParam } from './workflow-schemas.ts';
import { WAIT_DEFAULT_MS, WAIT_MAX_MS } from './executions.ts';
import { mcpTwin } from './mcp-twin.ts';

/** The pay-per-call surface: listings and calls by slug (REST and MCP), free or paid with x402 / MPP. */

const slugParam = z.string().trim().min(1, 'slug is required').max(80);

const listingSchema = z.object({
  slug: z.string(),
  title: z.string(),
  description: z.string(),
  type: z.enum(['read', 'write']),
  chainId: z.number().nullable(),
  workflowId: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  outputFields: z.record(z.string(), z.string()),
  free: z.boolean(),
  price: z.object({ mode: z.literal('fixed'), amount: z.string(), currency: z.literal('USD') }).nullable(),
  protocols: z.array(z.record(z.string(), z.unknown())),
  protocolsUsed: z.array(z.string()),
  call: z.object({ method: z.literal('POST'), url: z.string() }),
  mcpUrl: z.string(),
});

export const callOutputSchema = z.union([calldataSchema, runAnswerSchema]);

/** Shared by REST and MCP: receipts go out as headers (REST) or result `_meta` (MCP). */
export async function callForCaller(slug: string, inputs: Record<string, unknown>, ctx: ToolContext) {
  // An anonymous REST call of a free workflow is held to the per-IP budget anonymous MCP calls have at the MCP edge;
  // without it anyone could run a publisher's free workflow as fast as the gateway answers.
  const beforeFreeRun =
    ctx.transport === 'rest' && !ctx.principal
      ? () => spendPerIp(ctx, 'mcpPublicCallsPerIp', 'anonymous calls of free workflows are limited per IP address; send an API key for more')
      : undefined;
  const outcome: CallOutcome = await callListing(ctx.services, slug, inputs, { credentials: ctx.payment ?? {}, beforeFreeRun });
  if (outcome.kind === 'run' && outcome.receipt) {
    for (const [name, value] of Object.entries(ctx.services.payments.receiptHeaders(outcome.receipt))) ctx.setHeader(name, value);
    for (const [key, value] of Object.entries(ctx.services.payments.receiptMeta(outcome.receipt))) ctx.setResultMeta?.(key, value);
  }
  return outcome.body;
}

export const listListingsTool = defineTool({
  name: 'list_workflow_listings',
  title: 'List callable workflows',
  description:
    'Every listed workflow callable by slug, with its input schema, documented result fields, read or write type, chain and pricing (price {mode, amount, currency} and the x402 and MPP offers). Free; no credential needed. Call one with POST /api/mcp/workflows/{slug}/call.',
  scope: 'public',
  input: z.object({}),
  output: z.object({ count: z.number(), workflows: z.array(listingSchema) }),
  rest: { method: 'GET', path: '/api/mcp/workflows' },
  mcp: false,
  // The same frozen value until a listing changes: invoke and the REST edge then shape and serialize it once.
  handler: (_input, { services }) =>
    listingsDerived(services.store, services, 'list_workflow_listings', (listings) => {
      const workflows = listings.map((l) => listingView(l, services.payments, services.config.baseUrl));
      return deepFreeze({ count: workflows.length, workflows });
    }),
});

export const getListingTool = defineTool({
  name: 'get_workflow_listing',
  title: 'Get a workflow listing',
  description:
    'One listed workflow by slug: input schema, result fields, type, chain, price and payment offers. Then call_workflow {slug, inputs}, or its own MCP server at mcpUrl.',
  scope: 'public',
  input: z.object({ slug: slugParam }),
  output: listingSchema,
  rest: { method: 'GET', path: '/api/mcp/workflows/:slug' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler: async ({ slug }, ctx) => listingView(await getListing(ctx.services.store, slug), ctx.services.payments, ctx.services.config.baseUrl),
});

export const callWorkflowRestTool = defineTool({
  name: 'call_workflow_by_slug',
  title: 'Call a listed workflow (REST)',
  description:
    'The JSON body is the workflow\'s input (see GET /api/mcp/workflows/{slug}). Free read workflows answer {executionId, status, output: {result}}; write workflows answer {type: "calldata", to, data, value}. Paid workflows answer an unpaid call with 402 carrying PAYMENT-REQUIRED (x402 v2) and WWW-Authenticate: Payment (MPP); retry with PAYMENT-SIGNATURE or Authorization: Payment (one of them), and read PAYMENT-RESPONSE or Payment-Receipt on success.',
  scope: 'public',
  input: z.looseObject({ slug: slugParam }),
  output: callOutputSchema,
  rest: {
    method: 'POST',
    path: '/api/mcp/workflows/:slug/call',
    summary: 'Call a listed workflow (free, paid with x402 or MPP, or calldata)',
    errors: ['workflow_disabled'],
  },
  mcp: false,
  handler: ({ slug, ...body }, ctx) => callForCaller(slug, body, ctx),
});

export const getWorkflowCallTool = defineTool({
  name: 'get_workflow_call',
  title: 'Answer of a listed workflow call',
  description:
    'The answer of a call that was still running (its resultUrl): {executionId, status, output: {result}}, waiting up to timeoutMs for it to end. No credential: the executionId is the capability. Only runs started by calls of this listing.',
  scope: 'public',
  input: z.object({
    slug: slugParam,
    executionId: z.string().trim().min(1).max(64),
    timeoutMs: decimalWholeNumber('timeoutMs', 0, WAIT_MAX_MS).optional(),
  }),
  output: runAnswerSchema,
  rest: { method: 'GET', path: '/api/mcp/workflows/:slug/calls/:executionId', query: ['timeoutMs'] },
  mcp: false,
  handler: ({ slug, executionId, timeoutMs }, ctx) => callAnswer(ctx.services, slug, executionId, timeoutMs ?? WAIT_DEFAULT_MS),
});

/** The MCP twin: the REST body's fields arrive as the one `inputs` argument. */
export const callWorkflowTool = mcpTwin(callWorkflowRestTool, {
  name: 'call_workflow',
  title: 'Call a listed workflow',
  description:
    'Calls a listed workflow by slug with `inputs` per its input schema (get_workflow_listing). Read: {executionId, status, output: {result}} ("running": GET resultUrl); write: unsigned calldata {type, to, data, value}. Paid: an isError challenge (x402 PaymentRequired as structuredContent, MPP in _meta["org.paymentauth/payment-required"]); pay in _meta["x402/payment"] or _meta["org.paymentauth/credential"] and retry.',
  fields: { slug: 'slug' },
  catchall: { as: 'inputs', schema: z.record(z.string(), z.unknown()).default({}) },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }, outputSchema: false },
});

export const x402DirectoryTool = defineTool({
  name: 'x402_directory',
  title: 'x402 resource directory',
  description:
    'The /.well-known/x402 directory: {version: 1, resources: ["POST <base>/api/mcp/workflows/<slug>/call", ...]} for every paid listed workflow. Prices and offers: GET /api/mcp/workflows or the 402 itself.',
  scope: 'public',
  input: z.object({}),
  output: z.object({ version: z.literal(1), resources: z.array(z.string()) }),
  rest: { method: 'GET', path: '/.well-known/x402', cacheControl: 'public, max-age=300' },
  mcp: false,
  handler: (_input, { services }) =>
    listingsDerived(services.store, services, 'x402_directory', (listings) => {
      const paid = listings.filter((l) => l.price !== null && l.type === 'read');
      return deepFreeze({ version: 1 as const, resources: paid.map((l) => `POST ${services.config.baseUrl}/api/mcp/workflows/${l.slug}/call`) });
    }),
});

export const publishWorkflowTool = defineTool({
  name: 'publish_workflow',
  title: 'Publish a workflow as a callable listing',
  description: `Lists your workflow under a slug for any agent (call_workflow, /mcp/w/{slug}). price: USD such as "0.05" (max ${MAX_PUBLISHED_PRICE_USD}) paid via x402 or MPP, null = free. inputSchema (type "object") validates calls. type "write" answers unsigned calldata. result {nodeId, path} picks output.result. Undo: unlist_workflow.`,
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({
    workflowId: workflowIdParam,
    slug: listingSlug,
    title: z.string().trim().min(1).max(120).optional(),
    description: z.string().trim().min(1, 'description is required').max(2000),
    type: z.enum(['read', 'write']).default('read'),
    chainId: z.number().int().positive().nullable().default(null),
    price: decimalPrice.nullable(),
    inputSchema: inputSchemaSchema,
    // Bounded in count and name length too: each listing is part of every anonymous /openapi.json and GET /api/mcp/workflows.
    outputFields: z
      .record(z.string(), z.string().max(200))
      .refine((fields) => Object.keys(fields).length <= MAX_OUTPUT_FIELDS, `at most ${MAX_OUTPUT_FIELDS} documented result fields`)
      .refine(
        (fields) => Object.keys(fields).every((name) => name.length <= MAX_OUTPUT_FIELD_NAME),
        `result field names of at most ${MAX_OUTPUT_FIELD_NAME} characters`,
      )
      .default({}),
    /** output.result = `path` inside the data of node `nodeId` ('' = all of it); omitted = the final node's whole output. */
    result: z.object({ nodeId: z.string().min(1), path: z.string().max(200) }).optional(),
  }),
  output: listingSchema,
  rest: {
    method: 'POST',
    path: '/api/workflows/:workflowId/listing',
    summary: 'Publish (or update) a workflow as a callable listing',
    errors: ['slug_taken', 'conflict', 'no_wallet', 'action_not_available'],
  },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false } },
  quotas: ['listings'],
  async handler({ workflowId, ...request }, ctx) {
    const listing = await publishListing(ctx.services, requirePrincipal(ctx).organizationId, workflowId, request, ctx.quotas?.listings);
    return listingView(listing, ctx.services.payments, ctx.services.config.baseUrl);
  },
});

export const unlistWorkflowTool = defineTool({
  name: 'unlist_workflow',
  title: 'Unlist a published workflow',
  description:
    "Removes your workflow's listing: the slug stops being callable. The workflow is untouched and the slug stays yours (publish_workflow to relist).",
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ workflowId: workflowIdParam }),
  output: z.object({ success: z.literal(true), workflowId: z.string(), slug: z.string() }),
  rest: { method: 'DELETE', path: '/api/workflows/:workflowId/listing', errors: ['listing_not_found'] },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } },
  async handler({ workflowId }, ctx) {
    const { slug } = await unlistListing(ctx.services.store, requirePrincipal(ctx).organizationId, workflowId);
    return { success: true as const, workflowId, slug };
  },
});

export const workflowCallTools = [
  listListingsTool,
  getListingTool,
  callWorkflowTool,
  callWorkflowRestTool,
  getWorkflowCallTool,
  x402DirectoryTool,
  publishWorkflowTool,
  unlistWorkflowTool,
];
