/**
 * Redirect URIs a client may register (OAuth 2.1 §2.3.1, RFC 8252 §7.3):
 * https, or plain http only to a loopback address for native clients. No
 * fragment; no credentials in the URL.
 */

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Why this redirect URI is refused, or undefined when it is acceptable. */
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${JSON.stringify(uri)} is not an absolute URL`;
  }
  if (url.hash) return `${uri} has a fragment; redirect URIs must not`;
  if (url.username || url.password) return `${uri} carries credentials`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return undefined;
  return `${uri} must use https (plain http is accepted only for a loopback host: 127.0.0.1, [::1] or localhost)`;
}

/** A loopback redirect URI: a native client on the user's own machine (RFC 8252 §7.3), never a site of someone else's. */
export function isLoopbackRedirect(uri: string): boolean {
  const url = URL.canParse(uri) ? new URL(uri) : undefined;
  return url !== undefined && url.protocol === 'http:' && LOOPBACK.has(url.hostname);
}
