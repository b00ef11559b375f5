import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { canUse } from './authorize.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';
import { inputJsonSchema, outputJsonSchema } from './json-schema.ts';

/** Usage guidance for agents, generated from the registry so it lists exactly what the caller can call. */

const RECIPES = {
  directExecution: [
    'Simulate first: call the write tool with simulate=true.',
    'Continue only if the simulation has success=true and wouldRevert=false.',
    'Send for real with a fresh idempotency_key; reuse that same key on every retry of the same intent.',
    'Poll get_direct_execution_status with bounded backoff (1s, 2s, 4s ... up to 30s, at most 5 attempts); pollIntervalHint 0 means terminal.',
    'Keep transactionLink for the user.',
  ],
  workflows: [
    'Read list_action_schemas before building a workflow: config.actionType must match a key of `actions` exactly.',
    'Validate with validate_workflow before saving; fix every reported field, each names its nodeId, path and a suggestion.',
    'Run with execute_workflow, then wait_for_execution or get_execution; treat any status other than success as not successful.',
  ],
  errors: [
    'Errors are JSON objects {error, code, ...}; over MCP they arrive as isError results with that JSON in content[0].text.',
    'On 429 or rate_limited wait at least Retry-After seconds, then back off exponentially (cap 30s, at most 5 attempts).',
    'insufficient_scope means the key lacks the needed scope: mcp:read < mcp:write < mcp:admin; a key with no scope is unrestricted.',
  ],
};

export const toolsDocumentation = defineTool({
  name: 'tools_documentation',
  title: 'How to use these tools',
  description:
    'Start here: the safe-usage recipes (simulate, send with an idempotency key, poll) and your tools; toolName gives one tool’s full input and output schemas.',
  scope: 'public',
  input: z.object({ toolName: z.string().trim().min(1).optional() }),
  output: z.object({
    recipes: z.record(z.string(), z.array(z.string())),
    tools: z.array(
      z.object({
        name: z.string(),
        title: z.string(),
        scope: z.string(),
        description: z.string(),
        inputSchema: z.unknown().optional(),
        outputSchema: z.unknown().optional(),
      }),
    ),
  }),
  rest: { method: 'GET', path: '/api/mcp/tools-documentation' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler({ toolName }, { principal, tools }) {
    const visible = tools.filter((t) => t.mcp && canUse(principal, t));
    if (toolName) {
      const tool = visible.find((t) => t.name === toolName);
      if (!tool) {
        throw new ServiceError(404, 'not_found', `No tool named "${toolName}" is available to this caller.`, {
          availableTools: visible.map((t) => t.name),
        });
      }
      return {
        recipes: RECIPES,
        tools: [
          {
            name: tool.name,
            title: tool.title,
            scope: tool.scope,
            description: tool.description,
            inputSchema: inputJsonSchema(tool),
            outputSchema: outputJsonSchema(tool),
          },
        ],
      };
    }
    return {
      recipes: RECIPES,
      tools: visible.map((t) => ({ name: t.name, title: t.title, scope: t.scope, description: t.description })),
    };
  },
});

export const documentationTools = [toolsDocumentation];
