import type { AnyTool } from '../../tools/define.ts';
import type { ToolFamily } from '../../tools/families.ts';
import type { Config } from '../config.ts';
import { KEY_SCOPES } from '../auth/keys.ts';
import { MCP_PROTOCOL_VERSIONS } from '../mcp/sdk.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { discoveryUrls, LONG_DESCRIPTION, PRODUCT_NAME } from './identity.ts';
import { deriveSkills } from './skills.ts';

/**
 * The A2A agent card. Flowgate speaks MCP (streamable HTTP) and REST, not the
 * A2A message protocol, so its interface entries name the `MCP` binding (the
 * binding field is open-ended); the card is for identity, skills and
 * authentication. Written to A2A 1.0 (`supportedInterfaces`, security
 * schemes as one-of objects) while keeping the 0.3 fields older readers use:
 * top-level `url`, `protocolVersion`, `preferredTransport`, and the OpenAPI
 * style `type`/`scheme` inside each security scheme.
 */

export const A2A_PROTOCOL_VERSION = '1.0';
export const A2A_LEGACY_PROTOCOL_VERSION = '0.3.0';

const BEARER = {
  // A2A 1.0 (proto JSON one-of)
  httpAuthSecurityScheme: {
    scheme: 'Bearer',
    bearerFormat: 'svc_ organization API key',
    description: `Organization API key (svc_...) or OAuth 2.1 access token (authorization code + PKCE; metadata at /.well-known/oauth-authorization-server). Scopes: ${KEY_SCOPES.join(', ')}; a key without scope is unrestricted. Public tools need no credential.`,
  },
  // A2A 0.3 / OpenAPI readers
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'svc_ organization API key',
  description: 'Organization API key (svc_...).',
} as const;

const ACCESS_TAG = { key: 'requires-api-key', public: 'public', mixed: 'partly-public' } as const;

export function buildAgentCard(config: Pick<Config, 'baseUrl' | 'agentRegistration'>, registry: readonly AnyTool[], families: readonly ToolFamily[]) {
  const urls = discoveryUrls(config.baseUrl);
  // Skills an agent holding a key or token can use: session-only tools (get_run_steps) are for signed-in browsers.
  const bearerTools = registry.filter((tool) => tool.scope !== 'session');
  const skills = deriveSkills(bearerTools, families).map((skill) => ({
    id: skill.id,
    name: skill.name,
    description: skill.description,
    tags: [...skill.tags, ACCESS_TAG[skill.access]],
    ...(skill.examples ? { examples: skill.examples } : {}),
    ...(skill.access === 'key' ? { securityRequirements: [{ schemes: { bearer: { list: [] } } }], security: [{ bearer: [] }] } : {}),
  }));
  return {
    name: PRODUCT_NAME,
    description: LONG_DESCRIPTION,
    version: GATEWAY_VERSION,
    supportedInterfaces: [{ url: urls.mcp, protocolBinding: 'MCP', protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: { organization: PRODUCT_NAME, url: config.baseUrl },
    documentationUrl: urls.docs,
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [
        {
          uri: 'https://modelcontextprotocol.io/specification',
          description: `Tools are served over MCP streamable HTTP at ${urls.mcp} (protocol versions ${MCP_PROTOCOL_VERSIONS.join(', ')}); server card at ${urls.serverCard}; REST at ${urls.openApi}.`,
          required: false,
          params: { mcpEndpoint: urls.mcp, serverCard: urls.serverCard, openapi: urls.openApi, protocolVersions: [...MCP_PROTOCOL_VERSIONS] },
        },
      ],
    },
    securitySchemes: { bearer: BEARER },
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills,
    // A2A 0.3 fields that many readers still use.
    url: urls.mcp,
    protocolVersion: A2A_LEGACY_PROTOCOL_VERSION,
    preferredTransport: 'MCP',
    // ERC-8004: the onchain identity this deployment claims, when configured.
    ...(config.agentRegistration
      ? { registrations: [{ agentId: Number(config.agentRegistration.agentId), agentRegistry: config.agentRegistration.agentRegistry }] }
      : {}),
  };
}
