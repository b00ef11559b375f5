import { z } from 'zod';
import { createPublicTag, listPublicTags, PUBLIC_TAG_NAME_MAX } from '../src/org/public-tags.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/** Public tags: the shared vocabulary for published workflows (SPEC "Public tag"). */

const publicTagSchema = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string().describe('Lowercase, derived from the name; use it as the `tag` filter of the public workflow list'),
  workflowCount: z.number().int().describe('Public workflows carrying the tag'),
  createdAt: z.string(),
});

const listPublicTagsTool = defineTool({
  name: 'list_public_tags',
  title: 'List public tags',
  description: [
    'Public tags shared by all organizations: ids go in `publicTagIds` of go_live_workflow (at most 5), a slug is the `tag` filter of public workflows. Missing one? create_public_tag.',
  ].join(' '),
  scope: 'public',
  input: z.object({}),
  output: z.array(publicTagSchema),
  rest: { method: 'GET', path: '/api/public-tags' },
  mcp: { annotations: READ_ONLY_LOCAL, resultKey: 'publicTags' },
  handler: (_input, ctx) => listPublicTags(ctx.services.store),
});

const createPublicTagTool = defineTool({
  name: 'create_public_tag',
  title: 'Create public tag',
  description: [
    'Creates a public tag for every organization; its slug comes from `name` ("DeFi Yield!" → "defi-yield"). An existing slug answers 409 with that tag under `existing`.',
    'Next: pass the id in `publicTagIds` of go_live_workflow.',
  ].join(' '),
  scope: 'mcp:write',
  quotas: ['publicTags'],
  input: z.object({
    name: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(PUBLIC_TAG_NAME_MAX, `must be at most ${PUBLIC_TAG_NAME_MAX} characters`)
      .describe('Display name; must contain at least one ASCII letter or digit'),
  }),
  output: publicTagSchema,
  rest: { method: 'POST', path: '/api/public-tags', status: 201, errors: ['conflict'] },
  rateLimit: 'objectWritesPerOrganization',
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } },
  // mcp:write guarantees an authenticated principal here.
  handler: ({ name }, ctx) =>
    createPublicTag(ctx.services.store, { name, organizationId: requirePrincipal(ctx).organizationId, quota: ctx.quotas?.publicTags }),
});

export const publicTagTools = [listPublicTagsTool, createPublicTagTool];
