import type { Config } from '../config.ts';
import { KEY_SCOPES } from '../auth/keys.ts';
import { MCP_PROTOCOL_VERSIONS } from '../mcp/sdk.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { discoveryUrls, PRODUCT_NAME, serverName, SHORT_DESCRIPTION } from './identity.ts';

/**
 * The MCP server card (SEP-2127, schema v2): identity, the streamable-HTTP
 * remote at /mcp with the protocol versions the SDK negotiates, and how to
 * authenticate. Cards deliberately list no tools; clients call tools/list.
 */

export const SERVER_CARD_SCHEMA = 'https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json';

export function buildServerCard(config: Pick<Config, 'baseUrl'>) {
  const urls = discoveryUrls(config.baseUrl);
  return {
    $schema: SERVER_CARD_SCHEMA,
    name: serverName(config.baseUrl),
    title: PRODUCT_NAME,
    version: GATEWAY_VERSION,
    description: SHORT_DESCRIPTION,
    websiteUrl: urls.docs,
    remotes: [
      {
        type: 'streamable-http' as const,
        url: urls.mcp,
        supportedProtocolVersions: [...MCP_PROTOCOL_VERSIONS],
        headers: [
          {
            name: 'Authorization',
            description:
              'Optional. Without it you get the public tools (catalogs, marketplace search, validation). With an organization API key (svc_...) or an OAuth access token you get your organization’s tools, filtered by scope.',
            isRequired: false,
            isSecret: true,
            value: 'Bearer {api_key}',
            variables: {
              api_key: { description: 'Organization API key (svc_...), created with `flowgate keys create --name NAME`', isRequired: true, isSecret: true },
            },
          },
        ],
      },
    ],
    _meta: {
      'flowgate/auth': {
        anonymous: 'initialize, tools/list and the public tools need no credential',
        bearer: 'Authorization: Bearer svc_... (organization key)',
        scopes: [...KEY_SCOPES],
        protectedResourceMetadata: urls.mcpProtectedResource,
        oauth: `OAuth 2.1 with PKCE and dynamic client registration: ${urls.authorizationServer}`,
      },
      'flowgate/links': { openapi: urls.openApi, docs: urls.docs, llmsTxt: urls.llmsTxt, agentCard: urls.agentCard },
    },
  };
}
