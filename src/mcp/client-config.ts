import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** This checkout's CLI, so a printed stdio config works before the package is published. */
const LOCAL_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/flowgate.js');

/** Copy-paste MCP client configurations for a running gateway (printed by `npm start`). */
export function mcpClientConfigs(baseUrl: string, apiKey: string): string {
  const http = { mcpServers: { flowgate: { type: 'http', url: `${baseUrl}/mcp`, headers: { Authorization: `Bearer ${apiKey}` } } } };
  const desktop = {
    mcpServers: { flowgate: { command: 'node', args: [LOCAL_BIN, 'mcp', '--url', baseUrl], env: { FLOWGATE_API_KEY: apiKey } } },
  };
  return [
    'MCP client configuration (streamable HTTP):',
    JSON.stringify(http, null, 2),
    '',
    'Claude Code:',
    `  claude mcp add --transport http flowgate ${baseUrl}/mcp --header "Authorization: Bearer ${apiKey}"`,
    '',
    'Claude Desktop (claude_desktop_config.json; stdio bridge to this gateway):',
    JSON.stringify(desktop, null, 2),
  ].join('\n');
}
