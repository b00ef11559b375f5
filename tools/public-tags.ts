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
    'Lists the public tags shared by all organizations: id, name, slug and workflowCount (published workflows carrying it). No key needed.',
    'Use the ids as `publicTagIds` when publishing a workflow (go-live, at most 5), and a slug as the `tag` filter when browsing public workflows.',
    'Create a missing one with create_public_tag.',
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
    'Creates a public tag visible to every organization; its slug is derived from `name` (lowercase ASCII with dashes: "DeFi Yield!" becomes "defi-yield").',
    'Call list_public_tags first: when the slug already exists the answer is 409 with the existing tag under `existing`, whose id you can use directly.',
    'Next: pass the id in `publicTagIds` when publishing a workflow.',
  ].join(' '),
  scope: 'mcp:write',
  input: z.object({
    name: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(PUBLIC_TAG_NAME_MAX, `must be at most ${PUBLIC_TAG_NAME_MAX} characters`)
      .describe('Display name; must contain at least one ASCII letter or digit'),
  }),
  output: publicTagSchema,
  rest: { method: 'POST', path: '/api/public-tags', status: 201 },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } },
  // mcp:write guarantees an authenticated principal here.
  handler: ({ name }, ctx) => createPublicTag(ctx.services.store, { name, organizationId: requirePrincipal(ctx).organizationId }),
});

export const publicTagTools = [listPublicTagsTool, createPublicTagTool];
