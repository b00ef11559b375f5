import { z } from 'zod';
import { hexColorSchema } from '../src/org/colors.ts';
import { createProject, deleteProject, listProjects, PROJECT_DESCRIPTION_MAX, PROJECT_NAME_MAX, updateProject } from '../src/org/projects.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/**
 * Projects (SPEC "Tags, public tags, projects"). Every tool here has an
 * `mcp:*` scope, so authorize() has already refused anonymous callers and
 * `principal` is set whenever a handler runs.
 */

const projectSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  color: z.string().describe('Hex color, lowercase'),
  organizationId: z.string(),
  workflowCount: z.number().int().describe('Workflows assigned to the project'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const projectName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(PROJECT_NAME_MAX, `must be at most ${PROJECT_NAME_MAX} characters`)
  .describe('Project name');
const projectDescription = z.string().max(PROJECT_DESCRIPTION_MAX, `must be at most ${PROJECT_DESCRIPTION_MAX} characters`).describe('What the project groups');
const projectColor = hexColorSchema.describe('Hex color, "#rgb" or "#rrggbb"');
const projectId = z.string().min(1).max(100).describe('Project id from list_projects');

const listProjectsTool = defineTool({
  name: 'list_projects',
  title: 'List projects',
  description: [
    "The organization's projects (folders for workflows) with workflowCount: find a projectId for create_workflow or list_workflows. None fits? create_project.",
  ].join(' '),
  scope: 'mcp:read',
  input: z.object({}),
  output: z.array(projectSchema),
  rest: { method: 'GET', path: '/api/projects' },
  mcp: { annotations: READ_ONLY_LOCAL, resultKey: 'projects' },
  handler: (_input, ctx) => listProjects(ctx.services.store, requirePrincipal(ctx).organizationId),
});

const createProjectTool = defineTool({
  name: 'create_project',
  title: 'Create project',
  description: [
    'Creates a project to group workflows. Names need not be unique: check list_projects first. Next: pass the id as `projectId` to create_workflow or update_workflow.',
  ].join(' '),
  scope: 'mcp:write',
  quotas: ['projects'],
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ name: projectName, description: projectDescription.optional(), color: projectColor.optional() }),
  output: projectSchema,
  rest: { method: 'POST', path: '/api/projects', status: 201 },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } },
  handler: (input, ctx) => createProject(ctx.services.store, { organizationId: requirePrincipal(ctx).organizationId, ...input, quota: ctx.quotas?.projects }),
});

const updateProjectTool = defineTool({
  name: 'update_project',
  title: 'Update project',
  description:
    "Changes a project's name, description or color; only the fields you send change (at least one). Send `description: null` to clear it. Returns the updated project.",
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z
    .object({ projectId, name: projectName.optional(), description: projectDescription.nullable().optional(), color: projectColor.optional() })
    .refine((p) => p.name !== undefined || p.description !== undefined || p.color !== undefined, {
      error: 'send at least one of name, description, color',
    }),
  output: projectSchema,
  rest: { method: 'PATCH', path: '/api/projects/:projectId' },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false } },
  handler: ({ projectId: id, ...patch }, ctx) => updateProject(ctx.services.store, requirePrincipal(ctx).organizationId, id, patch),
});

const deleteProjectTool = defineTool({
  name: 'delete_project',
  title: 'Delete project',
  description: 'Deletes a project. Its workflows are kept and become unassigned; the response says how many (`unassignedWorkflows`). Cannot be undone.',
  scope: 'mcp:write',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ projectId }),
  output: z.object({ success: z.literal(true), id: z.string(), unassignedWorkflows: z.number().int() }),
  rest: { method: 'DELETE', path: '/api/projects/:projectId' },
  mcp: { annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } },
  async handler({ projectId: id }, ctx) {
    const result = await deleteProject(ctx.services.store, requirePrincipal(ctx).organizationId, id);
    return { success: true as const, ...result };
  },
});

export const projectTools = [listProjectsTool, createProjectTool, updateProjectTool, deleteProjectTool];
