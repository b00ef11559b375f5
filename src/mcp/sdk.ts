import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The only file that touches the MCP SDK's server API, so a move to the SDK's
 * v2 packages stays here. Everything else speaks plain descriptors and results.
 */

export type McpToolDescriptor = Tool;
export type McpCallResult = CallToolResult;
export const MCP_PROTOCOL_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;

export interface McpToolSet {
  list(): McpToolDescriptor[];
  call(name: string, args: Record<string, unknown>, meta: Record<string, unknown> | undefined): Promise<McpCallResult>;
}

export interface McpServerInfo {
  name: string;
  title: string;
  version: string;
  instructions: string;
}

/**
 * Answers one streamable-HTTP POST statelessly: a fresh server and transport
 * per request (the SDK cannot reuse a stateless transport), JSON responses.
 */
export async function answerMcpPost(info: McpServerInfo, tools: McpToolSet, request: Request, parsedBody: unknown): Promise<Response> {
  const server = new Server(
    { name: info.name, title: info.title, version: info.version },
    { capabilities: { tools: { listChanged: false } }, instructions: info.instructions },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.list() }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => tools.call(req.params.name, req.params.arguments ?? {}, req.params._meta));

  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { parsedBody });
  } finally {
    void transport.close();
    void server.close();
  }
}
