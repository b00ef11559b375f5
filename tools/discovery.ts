import { z } from 'zod';
import { KEY_SCOPES } from '../src/auth/keys.ts';
import { defineTool } from './define.ts';

/** RFC 9728 protected-resource metadata: where 401s' `WWW-Authenticate` points clients. */
export const oauthProtectedResource = defineTool({
  name: 'oauth_protected_resource',
  title: 'OAuth protected resource metadata',
  description: 'RFC 9728 metadata for the MCP endpoint: the resource URL, accepted bearer methods and scopes.',
  scope: 'public',
  input: z.object({}),
  output: z.object({
    resource: z.string(),
    resource_name: z.string(),
    bearer_methods_supported: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    resource_documentation: z.string(),
  }),
  rest: { method: 'GET', path: '/.well-known/oauth-protected-resource', cacheControl: 'public, max-age=3600' },
  mcp: false,
  handler(_input, { services }) {
    return {
      resource: `${services.config.baseUrl}/mcp`,
      resource_name: 'Flowgate MCP server',
      bearer_methods_supported: ['header'],
      scopes_supported: [...KEY_SCOPES],
      resource_documentation: `${services.config.baseUrl}/openapi.json`,
    };
  },
});

export const discoveryTools = [oauthProtectedResource];
