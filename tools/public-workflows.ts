import { z } from 'zod';
import { markFeatured } from '../src/engine/public-workflows.ts';
import { keptPublicWorkflows } from '../src/engine/public-list-cache.ts';
import { publicSummaries } from '../src/engine/public-search.ts';
import { defineTool, type ToolContext, READ_ONLY_LOCAL } from './define.ts';
import { booleanish } from './inputs.ts';
import { decimalWholeNumber, publicTagRefSchema, workflowIdParam, workflowSchema } from './workflow-schemas.ts';

/** The public side of workflows: the published listing, featuring, and search. */

const publicWorkflowSchema = workflowSchema.extend({
  publicTags: z.array(publicTagRefSchema),
  featured: z.boolean(),
  featuredCategory: z.string().nullable(),
  featuredProtocol: z.string().nullable(),
  featuredOrder: z.number().nullable(),
  publishedAt: z.string().nullable(),
});

export const listPublicWorkflowsTool = defineTool({
  name: 'list_public_workflows',
  title: 'List public workflows',
  description:
    'Published workflows of every organization with their public tags; filter by featured, featuredProtocol or a public tag slug (tag). Featured ones come first. Without limit, all (refused when they are too large to answer whole); with limit (1-200) and offset, a page.',
  scope: 'public',
  input: z
    .object({
      featured: booleanish.optional(),
      featuredProtocol: z.string().trim().min(1).max(100).optional(),
      tag: z.string().trim().min(1).max(100).optional(),
      limit: decimalWholeNumber('limit', 1, 200).optional(),
      offset: decimalWholeNumber('offset', 0, Number.MAX_SAFE_INTEGER).optional(),
    })
    .refine((q) => q.offset === undefined || q.limit !== undefined, { message: 'offset requires limit', path: ['offset'] }),
  output: z.array(publicWorkflowSchema),
  rest: { method: 'GET', path: '/api/workflows/public' },
  mcp: false,
  handler: (filters, ctx) => keptPublicWorkflows(ctx.services.store, filters),
});

export const featureWorkflowTool = defineTool({
  name: 'feature_workflow',
  title: 'Feature a public workflow',
  description:
    'Marks a published workflow as featured in the hub, with an optional category, protocol and order. Internal service authentication only (X-Internal-Service-Token).',
  scope: 'internal',
  input: z.object({
    workflowId: workflowIdParam,
    category: z.string().trim().min(1).max(100).optional(),
    protocol: z.string().trim().min(1).max(100).optional(),
    featuredOrder: z.number().int().min(0).max(1_000_000).optional(),
  }),
  output: publicWorkflowSchema,
  rest: { method: 'POST', path: '/api/hub/featured' },
  mcp: false,
  handler: (input, ctx) => markFeatured(ctx.services.store, input),
});

const searchResultSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  publicTags: z.array(publicTagRefSchema),
  featured: z.boolean(),
  category: z.string().nullable(),
  protocol: z.string().nullable(),
  chainIds: z.array(z.number()),
  workflowType: z.enum(['read', 'write']),
});

/**
 * Results one search answers, in the public list's order (featured first, then the newest published); `count` is
 * every match. Search needs no key and every tenant may publish 50 workflows: an empty query answered all of them,
 * with 5,000 public workflows a megabyte and 9 ms of the shared process per anonymous request, and more than any
 * agent's context holds. Narrower words, a category or a chain find the rest; GET /api/workflows/public pages them all.
 */
export const SEARCH_RESULTS = 50;

export const searchWorkflowsTool = defineTool({
  name: 'search_workflows',
  title: 'Search public workflows',
  description:
    'Finds public workflows by text, category (featured category or tag slug), chain and workflowType (read, or write: sends transactions). First 50 shown; count: all matches. Graph: get_workflow.',
  scope: 'public',
  input: z.object({
    query: z.string().trim().max(200).optional(),
    category: z.string().trim().min(1).max(100).optional(),
    chain: z.union([z.number().int().positive(), z.string().trim().min(1).max(100)]).optional(),
    workflowType: z.enum(['read', 'write']).optional(),
  }),
  output: z.object({ count: z.number(), results: z.array(searchResultSchema) }),
  rest: { method: 'GET', path: '/api/workflows/search' },
  mcp: { annotations: READ_ONLY_LOCAL },
  async handler({ query, category, chain, workflowType }, ctx: ToolContext) {
    const chainId = chain === undefined ? undefined : (ctx.services.chains.resolve(chain)?.chainId ?? -1);
    const words = (query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
    const results = [];
    let count = 0;
    for (const workflow of await publicSummaries(ctx.services.store)) {
      // Search offers workflows to use; one with a step that cannot run here would only fail.
      if (!workflow.runnable) continue;
      if (!words.every((word) => workflow.searchText.includes(word))) continue;
      const { networks, workflowType: type } = workflow;
      if (
        category &&
        !(workflow.featuredCategory?.toLowerCase() === category.toLowerCase() || workflow.publicTags.some((t) => t.slug === category.toLowerCase()))
      )
        continue;
      if (workflowType && type !== workflowType) continue;
      // Resolved only where needed: to filter by chain, or for one of the results shown (not for every match counted).
      if (chainId === undefined && count >= SEARCH_RESULTS) {
        count++;
        continue;
      }
      const chainIds = [...new Set(networks.map((n) => ctx.services.chains.resolve(n)?.chainId).filter((id): id is number => id !== undefined))];
      if (chainId !== undefined && !chainIds.includes(chainId)) continue;
      if (++count > SEARCH_RESULTS) continue;
      results.push({
        id: workflow.id,
        name: workflow.name,
        description: workflow.description,
        publicTags: workflow.publicTags,
        featured: workflow.featured,
        category: workflow.featuredCategory,
        protocol: workflow.featuredProtocol,
        chainIds,
        workflowType: type,
      });
    }
    return { count, results };
  },
});

export const publicWorkflowTools = [listPublicWorkflowsTool, featureWorkflowTool, searchWorkflowsTool];
