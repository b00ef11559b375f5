import FindMyWay from 'find-my-way';
import { protectedResourceMetadataUrl } from '../../auth/oauth/metadata.ts';

/**
 * The protected resources of this gateway (RFC 8707 / RFC 9728): the REST
 * API at the base URL, the MCP server at /mcp (also served at
 * /.well-known/mcp), and one MCP server per listed workflow at /mcp/w/<slug>.
 * An access token is bound to one of them: a token for the base URL is
 * accepted everywhere, a token for an MCP endpoint only there.
 */

export const MCP_ENDPOINTS = ['/mcp', '/.well-known/mcp'];
export const WORKFLOW_MCP_ENDPOINT = '/mcp/w/:slug';

export interface ResourceOfPath {
  /** '' (REST), '/mcp', '/.well-known/mcp' or '/mcp/w/<slug>'. */
  path: string;
  resource: string;
  metadataUrl: string;
}

export interface ResourceMap {
  /** Whether a path is an MCP endpoint (as express routes it: any case, trailing slash ignored). */
  isMcpEndpoint(path: string): boolean;
  /** The resource a request path belongs to. */
  of(path: string): ResourceOfPath;
  /** Whether a token bound to `tokenResource` may be used on `path`. */
  accepts(tokenResource: string, path: string): boolean;
}

const isCredentialProbe = (path: string) => path.replace(/\/+$/, '').toLowerCase() === '/api/keys';

/** A URL as compared: parsed and serialized, so `http://h` and `http://h/` are one resource. */
export const canonicalResource = (url: string): string => {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
};

export function resourceMap(baseUrl: string): ResourceMap {
  const router = FindMyWay({ caseSensitive: false, ignoreTrailingSlash: true });
  // Each MCP endpoint is its own resource, with its own metadata (an MCP client refuses metadata naming another URL
  // than the one it was given); /mcp and /.well-known/mcp serve one server, so a token for either is good on both.
  for (const path of MCP_ENDPOINTS) router.on('POST', path, () => {}, { endpoint: path });
  router.on('POST', WORKFLOW_MCP_ENDPOINT, () => {});
  const at = (path: string): ResourceOfPath => ({ path, resource: `${baseUrl}${path}`, metadataUrl: protectedResourceMetadataUrl(baseUrl, path) });
  const base = canonicalResource(baseUrl);
  const sameServer = new Map(MCP_ENDPOINTS.map((path) => [canonicalResource(`${baseUrl}${path}`), canonicalResource(`${baseUrl}/mcp`)]));
  const server = (resource: string) => sameServer.get(canonicalResource(resource)) ?? canonicalResource(resource);
  const isOurs = (resource: string) => canonicalResource(resource).startsWith(base);

  const of = (path: string): ResourceOfPath => {
    const found = router.find('POST', path);
    if (!found) return at('');
    const slug = found.params.slug;
    return at(slug === undefined ? (found.store as { endpoint: string }).endpoint : `/mcp/w/${slug}`);
  };
  return {
    isMcpEndpoint: (path) => router.find('POST', path) !== null,
    of,
    accepts(tokenResource, path) {
      const bound = canonicalResource(tokenResource);
      // GET /api/keys answers only what the credential itself is (the probe `flowgate mcp --url` runs before it
      // connects): any token of this gateway may ask, whichever resource it serves. Its POST is for sessions only.
      if (isCredentialProbe(path) && isOurs(bound)) return true;
      return bound === base || server(bound) === server(of(path).resource);
    },
  };
}
