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

export type ProgressReporter = (progress: number, total?: number, message?: string) => void;

export interface McpToolSet {
  list(): McpToolDescriptor[];
  call(name: string, args: Record<string, unknown>, meta: Record<string, unknown> | undefined, progress: ProgressReporter | undefined): Promise<McpCallResult>;
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
export async function answerMcpPost(info: McpServerInfo, tools: McpToolSet, request: Request, parsedBody: unknown, streaming: boolean): Promise<Response> {
  const server = new Server(
    { name: info.name, title: info.title, version: info.version },
    { capabilities: { tools: { listChanged: false } }, instructions: info.instructions },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.list() }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const token = req.params._meta?.progressToken;
    const progress: ProgressReporter | undefined =
      token === undefined
        ? undefined
        : (value, total, message) =>
            void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: value, total, message } }).catch(() => {});
    return tools.call(req.params.name, req.params.arguments ?? {}, req.params._meta, progress);
  });

  // Clients that accept event streams get SSE (so progress notifications arrive while a call runs); others get plain JSON.
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streaming });
  await server.connect(transport);
  const response = await transport.handleRequest(request, { parsedBody });
  if (!streaming || !response.body) {
    void transport.close();
    void server.close();
    return response;
  }
  // A streamed response ends when the stream does; release the pair then.
  const closing = response.body.pipeThrough(
    new TransformStream({
      flush() {
        void transport.close();
        void server.close();
      },
    }),
  );
  return new Response(closing, { status: response.status, headers: response.headers });
}
