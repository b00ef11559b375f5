import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  LATEST_PROTOCOL_VERSION,
  ListToolsRequestSchema,
  McpError,
  PingRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type InitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import { onceForFrozen } from '../immutable.ts';
import { stringifyJson } from '../text/json-text.ts';
import { JsonRpcToolError, SERVER_CAPABILITIES, type McpServerInfo, type McpToolDescriptor, type McpToolSet, type ProgressReporter } from './sdk.ts';

/**
 * The stateless JSON answer to one JSON-RPC message, without building the
 * SDK's Server and transport (answerMcpPost in sdk.ts builds both per POST,
 * an Ajv instance included: most of a small call's CPU time).
 *
 * It answers only what it can answer exactly as that pair would, checked by
 * the SDK's own schemas: a single well-formed initialize, ping, tools/list or
 * tools/call request, or a notification/response (202). Anything else (a
 * malformed envelope or params, another method, an unsupported
 * MCP-Protocol-Version header, a non-JSON content type, a task-augmented
 * call) returns undefined and the caller hands the POST to the SDK, so the
 * refusals keep the SDK's exact codes and messages. test/mcp-fast-path.test.ts
 * holds both paths to the same answers.
 */

export interface FastAnswer {
  status: 200 | 202;
  /** The JSON-RPC response (200), none for a 202. Served as `Content-Type: application/json`. */
  body?: string;
}

const ok = (id: unknown, result: unknown): FastAnswer => ({ status: 200, body: JSON.stringify({ result, jsonrpc: '2.0', id }) });
/** The same bytes as ok(id, result) for a result already serialized. */
const okSerialized = (id: unknown, json: string): FastAnswer => ({ status: 200, body: `{"result":${json},"jsonrpc":"2.0","id":${JSON.stringify(id)}}` });

/**
 * The serialized form of a tools/list, kept as long as its list is: the registry's lists are
 * computed once per kind of caller (toolsFor), so a full listing (about 40 KB) is serialized once.
 */
const serializedLists = new WeakMap<object, string>();
function listed(id: unknown, tools: McpToolDescriptor[]): FastAnswer {
  let json = serializedLists.get(tools);
  if (json === undefined) serializedLists.set(tools, (json = JSON.stringify(tools)));
  // The same bytes as ok(id, { tools }).
  return { status: 200, body: `{"result":{"tools":${json}},"jsonrpc":"2.0","id":${JSON.stringify(id)}}` };
}

/** What the SDK's protocol layer sends for an error thrown by a handler. */
function failed(id: unknown, error: unknown): FastAnswer {
  const e = (error instanceof JsonRpcToolError ? new McpError(error.code, error.message, error.data) : error) as {
    code?: unknown;
    message?: string;
    data?: unknown;
  };
  const code = Number.isSafeInteger(e.code) ? (e.code as number) : ErrorCode.InternalError;
  return {
    status: 200,
    body: JSON.stringify({ jsonrpc: '2.0', id, error: { code, message: e.message ?? 'Internal error', ...(e.data !== undefined && { data: e.data }) } }),
  };
}

const isRequest = (message: object): message is { id: string | number; method: string } => 'id' in message && 'method' in message;

export async function answerFast(
  info: McpServerInfo,
  tools: McpToolSet,
  message: unknown,
  headers: { contentType: string | undefined; protocolVersion: string | undefined },
): Promise<FastAnswer | undefined> {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  if (!isJsonContentType(headers.contentType)) return undefined;
  if (!JSONRPCMessageSchema.safeParse(message).success) return undefined;
  // The SDK checks the header on every POST but an initialize one.
  const version = headers.protocolVersion;
  const initialize = (message as { method?: unknown }).method === 'initialize' ? InitializeRequestSchema.safeParse(message) : undefined;
  if (version !== undefined && !initialize?.success && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  // Notifications and responses have nothing to answer in a stateless server (a cancellation names a request of another POST).
  if (!isRequest(message)) return { status: 202 };

  const { id } = message;
  switch (message.method) {
    case 'initialize': {
      if (!initialize?.success) return undefined;
      const requested = (initialize.data as InitializeRequest).params.protocolVersion;
      return ok(id, {
        protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
        capabilities: SERVER_CAPABILITIES,
        serverInfo: { name: info.name, title: info.title, version: info.version },
        ...(info.instructions && { instructions: info.instructions }),
      });
    }
    case 'ping':
      return PingRequestSchema.safeParse(message).success ? ok(id, {}) : undefined;
    case 'tools/list':
      if (!ListToolsRequestSchema.safeParse(message).success) return undefined;
      try {
        return listed(id, await tools.list());
      } catch (error) {
        return failed(id, error);
      }
    case 'tools/call':
      return callTool(tools, message);
    default:
      return undefined;
  }
}

async function callTool(tools: McpToolSet, message: { id: string | number }): Promise<FastAnswer | undefined> {
  if (!CallToolRequestSchema.safeParse(message).success) return undefined;
  // The handler reads the request as sent (the SDK's parse only checks it).
  const { params } = message as unknown as CallToolRequest;
  // A task-augmented call expects a CreateTaskResult: the SDK refuses it in its own words.
  if (params.task !== undefined) return undefined;
  // In a JSON (not streamed) answer the SDK drops progress notifications; the tool still sees a reporter, as there.
  const progress: ProgressReporter | undefined = params._meta?.progressToken === undefined ? undefined : () => {};
  try {
    const result = await tools.call(params.name, params.arguments ?? {}, params._meta, progress);
    return okSerialized(message.id, checkedJson(result));
  } catch (error) {
    return failed(message.id, error);
  }
}

/**
 * The SDK's server checks every result and sends its parsed form: that form, serialized. A deeply frozen
 * result (a static tool's: src/mcp/toolset.ts) is checked and serialized once.
 */
const checkedJson = onceForFrozen((result: object): string => {
  const checked = CallToolResultSchema.safeParse(result);
  if (!checked.success) throw new McpError(ErrorCode.InvalidParams, `Invalid tools/call result: ${checked.error.message}`);
  return stringifyJson(checked.data);
});
