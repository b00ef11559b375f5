/** Copy-paste MCP client configurations for a running gateway. */
export function mcpClientConfigs(baseUrl: string, apiKey: string): string {
  const http = { mcpServers: { flowgate: { type: 'http', url: `${baseUrl}/mcp`, headers: { Authorization: `Bearer ${apiKey}` } } } };
  return [
    'MCP client configuration (streamable HTTP):',
    JSON.stringify(http, null, 2),
    '',
    'Claude Code:',
    `  claude mcp add --transport http flowgate ${baseUrl}/mcp --header "Authorization: Bearer ${apiKey}"`,
  ].join('\n');
}
