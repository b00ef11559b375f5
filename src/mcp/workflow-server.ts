import type { AnyTool, ToolContext } from '../../tools/define.ts';
import { ServiceError } from '../errors.ts';
import type { Listing } from '../catalog/listings.ts';
import { toolDescription } from '../catalog/views.ts';
import { callRegistryTool, errorResult } from './toolset.ts';
import type { McpServerInfo, McpToolSet } from './sdk.ts';

/**
 * `/mcp/w/<slug>`: one listed workflow as its own MCP server with exactly one
 * tool, named after the slug and typed by the listing's input schema. Calls go
 * through the registry's call_workflow entry, so validation, payment and
 * receipts are the same as on /mcp and REST.
 */

export function workflowServerInfo(listing: Listing, version: string): McpServerInfo {
  return {
    name: `flowgate-${listing.slug}`,
    title: listing.title,
    version,
    instructions: `This server exposes one tool, ${listing.slug}. ${toolDescription(listing)}`,
  };
}

export function workflowToolSet(listing: Listing, callTool: AnyTool, makeContext: () => ToolContext): McpToolSet {
  const readOnly = listing.type === 'read';
  const descriptor = {
    name: listing.slug,
    title: listing.title,
    description: toolDescription(listing),
    inputSchema: listing.inputSchema as { type: 'object'; [key: string]: unknown },
    annotations: {
      title: listing.title,
      // Write workflows only return calldata, but what they prepare changes chain state once signed: no read-only hint.
      readOnlyHint: readOnly,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
  };
  return {
    list: () => [descriptor],
    async call(name, args, meta, progress) {
      if (name !== listing.slug) {
        return errorResult(new ServiceError(404, 'unknown_tool', `This server has one tool, "${listing.slug}"; "${name}" is not it.`));
      }
      return callRegistryTool(callTool, { slug: listing.slug, inputs: args }, meta, Object.assign(makeContext(), { notifyProgress: progress }));
    },
  };
}
