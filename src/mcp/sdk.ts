import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import {
  CallToolRequestSchema,
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * The only file that touches the MCP SDK's server API, so a move to the SDK's
 * v2 packages stays here. Everything else speaks plain descriptors and results
 * (fast-path.ts reads the SDK's message schemas only, to answer exactly as the
 * server built here would).
 */

export type McpToolDescriptor = Tool;
export type McpCallResult = CallToolResult;
export const MCP_PROTOCOL_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;

/** The first protocol version without JSON-RPC batching (2025-06-18 removed it). */
export const FIRST_VERSION_WITHOUT_BATCHING = '2025-06-18';

/**
 * The protocol version a POST speaks: its `MCP-Protocol-Version` header, else
 * the protocolVersion of an initialize request in it, else the version the
 * transport spec assumes for a request without the header (2025-03-26).
 */
export function declaredProtocolVersion(header: string | undefined, messages: readonly unknown[]): string {
  if (header) return header;
  for (const message of messages) {
    const m = message as { method?: unknown; params?: { protocolVersion?: unknown } } | null;
    if (m && typeof m === 'object' && m.method === 'initialize' && typeof m.params?.protocolVersion === 'string') return m.params.protocolVersion;
  }
  return DEFAULT_NEGOTIATED_PROTOCOL_VERSION;
}

/** Versions are dates (YYYY-MM-DD), so they order as strings. */
export const allowsBatching = (version: string) => version < FIRST_VERSION_WITHOUT_BATCHING;
/** The most messages the transport accepts in one batch. */
export const MAX_BATCH_MESSAGES: number = MAX_BATCH_SIZE;

/** An error the SDK's protocol layer sends as the JSON-RPC error: its numeric `code` and its message, nothing added. */
const jsonRpcFailure = (code: number, message: string) => Object.assign(new Error(message), { code });

/**
 * tools/call, with the envelope checked here: the SDK's own check runs where
 * a failure becomes -32603 carrying zod's raw issue JSON. A malformed
 * envelope (no name, a numeric name, arguments that are not an object) is
 * -32602 Invalid params naming the field.
 */
const CheckedCallToolRequest = z.looseObject({ method: z.literal('tools/call') }).check((ctx) => {
  const parsed = CallToolRequestSchema.safeParse(ctx.value);
  if (parsed.success) return;
  const detail = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || 'request'}: ${i.message.replace(/^Invalid input: /, '')}`).join('; ');
  throw jsonRpcFailure(
    ErrorCode.InvalidParams,
    `Invalid params for tools/call: ${detail}. Send params {"name": "<tool name>", "arguments": {...}} with a string name and an object of arguments; tools/list names the tools.`,
  );
});

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

/** What initialize announces: tools, a fixed list. */
export const SERVER_CAPABILITIES = { tools: { listChanged: false } };

/**
 * Answers one streamable-HTTP POST statelessly: a fresh server and transport
 * per request (the SDK cannot reuse a stateless transport), JSON responses.
 */
function createServer(info: McpServerInfo, tools: McpToolSet): Server {
  const server = new Server(
    { name: info.name, title: info.title, version: info.version },
    { capabilities: SERVER_CAPABILITIES, instructions: info.instructions },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await tools.list() }));
  server.setRequestHandler(CheckedCallToolRequest, async (checked, extra) => {
    const req = checked as unknown as CallToolRequest; // CheckedCallToolRequest has checked it
    const token = req.params._meta?.progressToken;
    const progress: ProgressReporter | undefined =
      token === undefined
        ? undefined
        : (value, total, message) =>
            void extra
              .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: value, total, message } })
              .catch(() => {});
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
export async function connectRemoteToolSet(
  mcpUrl: string,
  headers: Record<string, string>,
  clientInfo: { name: string; version: string },
): Promise<RemoteToolSet> {
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
