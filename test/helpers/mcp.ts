import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { registry } from '../../tools/index.ts';

/** An MCP SDK client connected to a test gateway's /mcp, optionally with an organization key. */
export async function connectMcp(gatewayUrl: string, key?: string): Promise<Client> {
  const client = new Client({ name: 'flowgate-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gatewayUrl}/mcp`), { requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : undefined }),
  );
  return client;
}

/** Calls a tool and returns `{isError, body}` where body is the parsed JSON of content[0].text. */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ isError: boolean; body: any; structured: any }> {
  const result = await client.callTool({ name, arguments: args });
  const text = (result.content as { type: string; text: string }[])[0]?.text ?? 'null';
  return { isError: result.isError === true, body: JSON.parse(text), structured: result.structuredContent };
}

/**
 * The tools/list an organization key (or the embedded local owner) should see: every MCP-exposed entry
 * except the session-only ones (get_run_steps, stream_analytics), which only signed-in browsers list
 * (test/analytics.test.ts).
 */
export function organizationToolNames(): string[] {
  return registry
    .filter((t) => t.mcp && t.scope !== 'session')
    .map((t) => t.name)
    .sort();
}
