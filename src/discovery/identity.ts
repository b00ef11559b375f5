import { isIP } from 'node:net';

/** Who this deployment is, as every discovery document states it. Built from FLOWGATE_BASE_URL. */

export const PRODUCT_NAME = 'Flowgate';
/** At most 100 characters (the MCP server card's limit), so every card can use it as is. */
export const SHORT_DESCRIPTION = 'Onchain workflow automation for agents: build and run workflows, send simulated-first transactions.';
export const LONG_DESCRIPTION =
  'Flowgate is an MCP-first gateway for onchain workflow automation. Agents build workflows (a trigger plus action nodes), run them and follow their verified transactions, ' +
  'search and call published workflows, and read the action, protocol and chain catalogs. Every operation is an MCP tool at /mcp and a REST route described at /openapi.json.';

/** The MCP protocol versions this deployment speaks (the SDK's), as every card states them. */
export { MCP_PROTOCOL_VERSIONS } from '../mcp/sdk.ts';

/** What an MCP client is told at initialize (HTTP and stdio alike). */
export const MCP_INSTRUCTIONS =
  'Flowgate runs onchain workflows and direct transactions for an organization. Call tools_documentation first for the safe-usage recipe; read list_action_schemas before building workflows; simulate writes before sending them.';

/**
 * Reverse-DNS server name with exactly one slash, as the server-card schema
 * requires: `api.example.com` → `com.example.api/flowgate`. IP addresses and
 * single-label hosts (localhost) are kept as they are.
 */
export function serverName(baseUrl: string): string {
  const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
  const namespace = isIP(host) || !host.includes('.') ? host.replace(/:/g, '-') : host.split('.').reverse().join('.');
  return `${namespace}/flowgate`;
}

export const discoveryUrls = (baseUrl: string) => ({
  mcp: `${baseUrl}/mcp`,
  serverCard: `${baseUrl}/.well-known/mcp.json`,
  agentCard: `${baseUrl}/.well-known/agent-card.json`,
  agentRegistration: `${baseUrl}/.well-known/agent-registration.json`,
  protectedResource: `${baseUrl}/.well-known/oauth-protected-resource`,
  mcpProtectedResource: `${baseUrl}/.well-known/oauth-protected-resource/mcp`,
  authorizationServer: `${baseUrl}/.well-known/oauth-authorization-server`,
  openApi: `${baseUrl}/openapi.json`,
  docs: `${baseUrl}/docs`,
  llmsTxt: `${baseUrl}/llms.txt`,
});
