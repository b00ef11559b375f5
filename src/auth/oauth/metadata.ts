import { OAUTH_SCOPES } from './scopes.ts';

/**
 * The discovery documents of the OAuth server: RFC 8414 authorization-server
 * metadata, and RFC 9728 protected-resource metadata for the REST API (the
 * base URL), /mcp and each /mcp/w/<slug>. The issuer is the base URL; the
 * endpoints are mounted at its root (src/http/oauth/router.ts).
 */

/** How clients authenticate at /token: public clients with PKCE, or a secret in the form body (the SDK's check). */
export const TOKEN_ENDPOINT_AUTH_METHODS: readonly string[] = ['none', 'client_secret_post'];

export const OAUTH_ENDPOINTS = { authorize: '/authorize', token: '/token', register: '/register', revoke: '/revoke' } as const;

export function authorizationServerMetadata(baseUrl: string) {
  return {
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}${OAUTH_ENDPOINTS.authorize}`,
    token_endpoint: `${baseUrl}${OAUTH_ENDPOINTS.token}`,
    registration_endpoint: `${baseUrl}${OAUTH_ENDPOINTS.register}`,
    revocation_endpoint: `${baseUrl}${OAUTH_ENDPOINTS.revoke}`,
    scopes_supported: [...OAUTH_SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post'],
    client_id_metadata_document_supported: true,
    service_documentation: `${baseUrl}/docs/authentication`,
  };
}

/** `path`: '' for the REST API (the base URL), '/mcp' or '/mcp/w/<slug>'. */
export function protectedResourceMetadata(baseUrl: string, path: string, name: string) {
  return {
    resource: `${baseUrl}${path}`,
    resource_name: name,
    authorization_servers: [baseUrl],
    bearer_methods_supported: ['header'],
    scopes_supported: [...OAUTH_SCOPES],
    resource_documentation: `${baseUrl}/docs/authentication`,
  };
}

export const protectedResourceMetadataUrl = (baseUrl: string, path: string) => `${baseUrl}/.well-known/oauth-protected-resource${path}`;
