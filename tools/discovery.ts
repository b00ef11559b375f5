import { z } from 'zod';
import { authorizationServerMetadata, protectedResourceMetadata } from '../src/auth/oauth/metadata.ts';
import { getListing } from '../src/catalog/listings.ts';
import { buildAgentCard } from '../src/discovery/agent-card.ts';
import { buildAgentRegistration } from '../src/discovery/agent-registration.ts';
import { discoveryUrls, MCP_PROTOCOL_VERSIONS } from '../src/discovery/identity.ts';
import { buildServerCard } from '../src/discovery/server-card.ts';
import { ServiceError } from '../src/errors.ts';
import { defineTool, type AnyTool } from './define.ts';
import { TOOL_FAMILIES } from './families.ts';

/**
 * Discovery documents: everything an agent that knows only the base URL needs
 * to find the rest. All public and cacheable (Cache-Control, ETag, 304), all
 * built from FLOWGATE_BASE_URL and the registry at request time.
 */

const CACHE = 'public, max-age=300';

const protectedResourceOutput = z.object({
  resource: z.string(),
  resource_name: z.string(),
  authorization_servers: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  resource_documentation: z.string(),
});

/**
 * RFC 9728 protected-resource metadata of a fixed resource (`resourcePath` '' is the REST API at the base URL): where
 * 401s' `WWW-Authenticate` points clients, naming this gateway's OAuth server. One operation per resource.
 */
const fixedProtectedResource = (a: { name: string; title: string; description: string; resourcePath: string; resourceName: string }) =>
  defineTool({
    name: a.name,
    title: a.title,
    description: a.description,
    scope: 'public',
    input: z.object({}),
    output: protectedResourceOutput,
    rest: { method: 'GET', path: `/.well-known/oauth-protected-resource${a.resourcePath}`, cacheControl: 'public, max-age=3600' },
    mcp: false,
    handler: (_input, { services }) => protectedResourceMetadata(services.config.baseUrl, a.resourcePath, a.resourceName),
  });

export const oauthProtectedResource = fixedProtectedResource({
  name: 'oauth_protected_resource',
  title: 'OAuth protected resource metadata',
  description: 'RFC 9728 metadata for the REST API (the base URL): authorization server, bearer methods and scopes.',
  resourcePath: '',
  resourceName: 'Flowgate REST API',
});

export const oauthProtectedResourceMcp = fixedProtectedResource({
  name: 'oauth_protected_resource_mcp',
  title: 'OAuth protected resource metadata of /mcp',
  description: 'RFC 9728 metadata for the MCP endpoint /mcp.',
  resourcePath: '/mcp',
  resourceName: 'Flowgate MCP server',
});

export const oauthProtectedResourceWellKnownMcp = fixedProtectedResource({
  name: 'oauth_protected_resource_well_known_mcp',
  title: 'OAuth protected resource metadata of /.well-known/mcp',
  description: 'RFC 9728 metadata for /.well-known/mcp, the same MCP server as /mcp (a token for either works on both).',
  resourcePath: '/.well-known/mcp',
  resourceName: 'Flowgate MCP server',
});

export const oauthProtectedResourceWorkflow = defineTool({
  name: 'oauth_protected_resource_workflow',
  title: 'OAuth protected resource metadata of a workflow MCP server',
  description: 'RFC 9728 metadata for the MCP server of one listed workflow, /mcp/w/{slug}.',
  scope: 'public',
  input: z.object({ slug: z.string().min(1).max(100) }),
  output: protectedResourceOutput,
  rest: { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp/w/:slug', cacheControl: 'public, max-age=300' },
  mcp: false,
  async handler({ slug }, { services }) {
    const listing = await getListing(services.store, slug);
    return protectedResourceMetadata(services.config.baseUrl, `/mcp/w/${listing.slug}`, `Flowgate workflow ${listing.slug}`);
  },
});

/** RFC 8414 metadata of the OAuth 2.1 authorization server (src/http/oauth/router.ts serves its endpoints). */
export const oauthAuthorizationServer = defineTool({
  name: 'oauth_authorization_server',
  title: 'OAuth authorization server metadata',
  description: 'RFC 8414 metadata: authorize, token, register and revoke endpoints, PKCE S256, scopes.',
  scope: 'public',
  input: z.object({}),
  output: z.looseObject({ issuer: z.string(), authorization_endpoint: z.string(), token_endpoint: z.string(), registration_endpoint: z.string() }),
  rest: { method: 'GET', path: '/.well-known/oauth-authorization-server', cacheControl: 'public, max-age=3600' },
  mcp: false,
  handler: (_input, { services }) => authorizationServerMetadata(services.config.baseUrl),
});

const serverCardOutput = z.looseObject({
  $schema: z.string(),
  name: z.string(),
  version: z.string(),
  description: z.string(),
  remotes: z.array(z.looseObject({ type: z.string(), url: z.string(), supportedProtocolVersions: z.array(z.string()) })),
});

/** The same card at each location clients look for it (SEP-2127 reserves `<mcp-url>/server-card`). */
function serverCardAt(name: string, path: string, where: string): AnyTool {
  return defineTool({
    name,
    title: 'MCP server card',
    description: `MCP server card (${where}): the streamable-HTTP endpoint /mcp, its supported protocol versions and how to authenticate.`,
    scope: 'public',
    input: z.object({}),
    output: serverCardOutput,
    rest: { method: 'GET', path, cacheControl: CACHE },
    mcp: false,
    handler: (_input, { services }) => buildServerCard(services.config),
  });
}

export const mcpServerCard = serverCardAt('mcp_server_card', '/.well-known/mcp.json', 'well-known location');
export const mcpServerCardDirectory = serverCardAt('mcp_server_card_well_known_directory', '/.well-known/mcp/server-card.json', 'well-known directory form');
export const mcpServerCardAtEndpoint = serverCardAt('mcp_server_card_at_endpoint', '/mcp/server-card', 'next to the MCP endpoint');

/** GET /.well-known/mcp; POSTs there are MCP JSON-RPC, answered like /mcp (see src/http/app.ts). */
export const mcpTransportDiscovery = defineTool({
  name: 'mcp_transport',
  title: 'MCP transport entry point',
  description:
    'Where and how to connect an MCP client: the streamable-HTTP endpoint (JSON-RPC POSTs are also accepted at this URL), protocol versions, authentication and a stdio bridge command.',
  scope: 'public',
  input: z.object({}),
  output: z.looseObject({
    transport: z.literal('streamable-http'),
    endpoint: z.string(),
    protocolVersions: z.array(z.string()),
    serverCard: z.string(),
  }),
  rest: { method: 'GET', path: '/.well-known/mcp', cacheControl: CACHE },
  mcp: false,
  handler(_input, { services }) {
    const urls = discoveryUrls(services.config.baseUrl);
    return {
      transport: 'streamable-http' as const,
      endpoint: urls.mcp,
      alsoAcceptsPostsHere: true,
      protocolVersions: [...MCP_PROTOCOL_VERSIONS],
      serverCard: urls.serverCard,
      authentication: {
        anonymous: 'initialize, tools/list and the public tools',
        header: 'Authorization: Bearer <API_KEY> (or an OAuth access token)',
        protectedResourceMetadata: urls.mcpProtectedResource,
        oauthAuthorizationServer: urls.authorizationServer,
      },
      // The CLI of the client's own Flowgate checkout, run on the client's machine: not an npm registry package name, which
      // anyone could claim, nor this server's path, which is of no use there and no business of anonymous readers.
      stdio: {
        command: 'node',
        args: [`${STDIO_CHECKOUT_PLACEHOLDER}/bin/flowgate.js`, 'mcp', '--url', services.config.baseUrl],
        env: { FLOWGATE_API_KEY: '<API_KEY>' },
      },
      documentation: `${urls.docs}/mcp`,
    };
  },
});

/** Where the client's Flowgate checkout goes in the advertised stdio command. */
export const STDIO_CHECKOUT_PLACEHOLDER = '<FLOWGATE_CHECKOUT>';

export const agentCard = defineTool({
  name: 'agent_card',
  title: 'A2A agent card',
  description:
    'Agent identity card: skills derived from the tool families, security schemes, interfaces (MCP at /mcp), and the ERC-8004 registration when configured.',
  scope: 'public',
  input: z.object({}),
  output: z.looseObject({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    supportedInterfaces: z.array(z.looseObject({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() })),
    skills: z.array(z.looseObject({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) })),
    url: z.string(),
    protocolVersion: z.string(),
  }),
  rest: { method: 'GET', path: '/.well-known/agent-card.json', cacheControl: CACHE },
  mcp: false,
  handler: (_input, { services, tools }) => buildAgentCard(services.config, tools, TOOL_FAMILIES),
});

export const agentRegistration = defineTool({
  name: 'agent_registration',
  title: 'ERC-8004 registration document',
  description:
    'The ERC-8004 registration-v1 document of this deployment (what its onchain agentURI resolves to). 404 unless FLOWGATE_AGENT_ID and FLOWGATE_AGENT_REGISTRY are configured.',
  scope: 'public',
  input: z.object({}),
  output: z.looseObject({
    type: z.string(),
    name: z.string(),
    registrations: z.array(z.object({ agentId: z.number(), agentRegistry: z.string() })),
  }),
  rest: { method: 'GET', path: '/.well-known/agent-registration.json', cacheControl: CACHE },
  mcp: false,
  handler(_input, { services }) {
    const registration = services.config.agentRegistration;
    if (!registration) {
      throw new ServiceError(
        404,
        'not_configured',
        'This deployment has no ERC-8004 identity; the operator sets FLOWGATE_AGENT_ID and FLOWGATE_AGENT_REGISTRY to publish one.',
      );
    }
    return buildAgentRegistration(services.config, registration);
  },
});

export const discoveryTools = [
  oauthProtectedResource,
  oauthProtectedResourceMcp,
  oauthProtectedResourceWellKnownMcp,
  oauthProtectedResourceWorkflow,
  oauthAuthorizationServer,
  mcpServerCard,
  mcpServerCardDirectory,
  mcpServerCardAtEndpoint,
  mcpTransportDiscovery,
  agentCard,
  agentRegistration,
];
