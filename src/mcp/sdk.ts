import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  McpError,
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

/**
 * Thrown by a tool set to answer a tools/call with a JSON-RPC error instead of
 * a result (the MPP -32042 payment challenge). The SDK's server sends a
 * thrown McpError as the error response, with its code and data intact.
 */
export class JsonRpcToolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: Record<string, unknown>,
  ) {
    super(message);
  }
}

export type ProgressReporter = (progress: number, total?: number, message?: string) => void;

export interface McpToolSet {
  list(): McpToolDescriptor[] | Promise<McpToolDescriptor[]>;
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
function createServer(info: McpServerInfo, tools: McpToolSet): Server {
  const server = new Server(
    { name: info.name, title: info.title, version: info.version },
    { capabilities: { tools: { listChanged: false } }, instructions: info.instructions },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await tools.list() }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const token = req.params._meta?.progressToken;
    const progress: ProgressReporter | undefined =
      token === undefined
        ? undefined
        : (value, total, message) =>
            void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: value, total, message } }).catch(() => {});
    try {
      return await tools.call(req.params.name, req.params.arguments ?? {}, req.params._meta, progress);
    } catch (error) {
      if (error instanceof JsonRpcToolError) throw new McpError(error.code, error.message, error.data);
      throw error;
    }
  });
  return server;
}

export async function answerMcpPost(info: McpServerInfo, tools: McpToolSet, request: Request, parsedBody: unknown, streaming: boolean): Promise<Response> {
  const server = createServer(info, tools);
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

/**
 * Serves a tool set over stdin/stdout (Claude Desktop style local configs).
 * Resolves once connected; `closed` settles when the client goes away.
 */
export async function serveMcpStdio(info: McpServerInfo, tools: McpToolSet): Promise<{ closed: Promise<void> }> {
  const server = createServer(info, tools);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    // The SDK notices a closed stdin only on the next write; ending stdin means the client left.
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  return { closed };
}

export interface RemoteToolSet extends McpToolSet {
  instructions: string | undefined;
  close(): Promise<void>;
}

/** A remote gateway's MCP endpoint as a tool set (the stdio bridge): list and call go over streamable HTTP. */
export async function connectRemoteToolSet(mcpUrl: string, headers: Record<string, string>, clientInfo: { name: string; version: string }): Promise<RemoteToolSet> {
  const client = new Client(clientInfo);
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
  return {
    instructions: client.getInstructions(),
    async list() {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    },
    async call(name, args, meta, progress) {
      const result = await client.callTool(
        { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
        undefined,
        progress ? { onprogress: (p) => progress(p.progress, p.total, p.message) } : undefined,
      );
      return result as CallToolResult;
    },
    close: () => client.close(),
  };
}
