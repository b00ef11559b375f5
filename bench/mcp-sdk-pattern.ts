import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AnyTool, ToolContext } from '../tools/define.ts';
import type { Services } from '../src/services.ts';
import { callRegistryTool } from '../src/mcp/toolset.ts';

/**
 * The anchor of the MCP row: the MCP SDK's own stateless pattern (its README's
 * "without session management" example: a new McpServer and
 * StreamableHTTPServerTransport per POST, sessionIdGenerator undefined) on a
 * plain express app, serving the registry's list_chains tool through the same
 * call as the gateway (callRegistryTool), anonymous. It answers JSON
 * (enableJsonResponse), as the gateway does, so both send the same bytes.
 */
export async function startSdkPatternServer(services: Services, registry: readonly AnyTool[]): Promise<{ url: string; close(): void }> {
  const tool = registry.find((t) => t.name === 'list_chains')!;
  const context: ToolContext = {
    principal: null,
    services,
    internalService: false,
    ip: '127.0.0.1',
    transport: 'mcp',
    tools: registry,
    setHeader() {},
    setStatus() {},
  };
  const app = express();
  app.use(express.json());
  app.post('/mcp', async (req, res) => {
    const server = new McpServer({ name: 'sdk-pattern', version: '1.0.0' });
    server.registerTool(tool.name, { title: tool.title, description: tool.description }, () => callRegistryTool(tool, {}, undefined, context));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}
