import { z } from 'zod';
import { hexColorSchema } from '../src/org/colors.ts';
import { createTag, deleteTag, listTags, TAG_NAME_MAX, updateTag } from '../src/org/tags.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/**
 * Organization tags (SPEC "Tags, public tags, projects"). Every tool here has
 * an `mcp:*` scope, so authorize() has already refused anonymous callers and
 * `principal` is set whenever a handler runs.
 */

const tagSchema = z.object({
  id: z.string(),
  name: z.string(),
  color: z.string().describe('Hex color, lowercase'),
  organizationId: z.string(),
  userId: z.string().describe('The user who created the tag'),
  workflowCount: z.number().int().describe('Workflows of this organization carrying the tag'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const tagName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(TAG_NAME_MAX, `must be at most ${TAG_NAME_MAX} characters`)
  .describe('Tag name, unique in the organization (case-insensitive)');
const tagColor = hexColorSchema.describe('Hex color, "#rgb" or "#rrggbb"');
const tagId = z.string().min(1).max(100).describe('Tag id from list_tags');

const listTagsTool = defineTool({
  name: 'list_tags',
  title: 'List tags',
  description: [
    "The organization's tags with workflowCount: find a tagId for create_workflow, update_workflow or list_workflows (one tag per workflow). None fits? create_tag.",
  ].join(' '),
  scope: 'mcp:read',
  input: z.object({}),
  output: z.array(tagSchema),
  rest: { method: 'GET', path: '/api/tags' },
  mcp: { annotations: READ_ONLY_LOCAL, resultKey: 'tags' },
  handler: (_input, ctx) => listTags(ctx.services.store, requirePrincipal(ctx).organizationId),
});

const createTagTool = defineTool({
  name: 'create_tag',
  title: 'Create tag',
  description: [
    'Creates a tag for labelling workflows. A name taken (ignoring case) answers 409 with `existingTagId` to use instead.',
    'Next: pass the id as `tagId` to create_workflow or update_workflow.',
  ].join(' '),
  scope: 'mcp:write',
  quotas: ['tags'],
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ name: tagName, color: tagColor }),
  output: tagSchema,
  rest: { method: 'POST', path: '/api/tags', status: 201, errors: ['conflict'] },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } },
  handler: (input, ctx) =>
    createTag(ctx.services.store, {
      organizationId: requirePrincipal(ctx).organizationId,
      userId: requirePrincipal(ctx).userId,
      ...input,
      quota: ctx.quotas?.tags,
    }),
});

const updateTagTool = defineTool({
  name: 'update_tag',
  title: 'Update tag',
  description:
    'Renames or recolors an organization tag; only the fields you send change (send at least one of `name`, `color`). Workflows keep the tag. Returns the updated tag.',
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z
    .object({ tagId, name: tagName.optional(), color: tagColor.optional() })
    .refine((patch) => patch.name !== undefined || patch.color !== undefined, { error: 'send at least one of name, color' }),
  output: tagSchema,
  rest: { method: 'PATCH', path: '/api/tags/:tagId', errors: ['conflict'] },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false } },
  handler: ({ tagId: id, ...patch }, ctx) => updateTag(ctx.services.store, requirePrincipal(ctx).organizationId, id, patch),
});

const deleteTagTool = defineTool({
  name: 'delete_tag',
  title: 'Delete tag',
  description: 'Deletes an organization tag. Its workflows are kept and become untagged; the response says how many (`untaggedWorkflows`). Cannot be undone.',
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ tagId }),
  output: z.object({ success: z.literal(true), id: z.string(), untaggedWorkflows: z.number().int() }),
  rest: { method: 'DELETE', path: '/api/tags/:tagId' },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } },
  async handler({ tagId: id }, ctx) {
    const result = await deleteTag(ctx.services.store, requirePrincipal(ctx).organizationId, id);
    return { success: true as const, ...result };
  },
});

export const tagTools = [listTagsTool, createTagTool, updateTagTool, deleteTagTool];
