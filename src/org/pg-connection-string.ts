/**
 * What a PostgreSQL `connectionString` may say. pg reads `sslcert`, `sslkey`
 * and `sslrootcert` as paths on the gateway's own disk, synchronously, while
 * it builds the client: a tenant naming `/dev/zero` grew the process without
 * bound, a FIFO froze it, and the error told which paths exist. Other query
 * parameters can repoint the host (`host=`) or set server options. So only a
 * `postgres://` URL to a network host is taken, with the parameters below;
 * TLS is `ssl: true` or `sslmode`, checked against the system's CAs.
 */

const ALLOWED_PARAMETERS = new Set(['sslmode', 'ssl', 'application_name', 'connect_timeout']);
const SSL_MODES = new Set(['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']);

/** Why a connection string is refused (naming parameters, never values), or undefined when it may be used. */
export function connectionStringProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL of the form postgres://user:password@host:port/database';
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') return `must start with postgres:// or postgresql:// (got ${url.protocol}//)`;
  // An empty host, or one that decodes to a path, is a Unix socket on the gateway's machine.
  if (!url.hostname || decodeURIComponent(url.hostname).includes('/')) return 'must name a network host (Unix sockets are not reachable from here)';
  for (const [name, parameter] of url.searchParams) {
    if (!ALLOWED_PARAMETERS.has(name)) {
      return `parameter "${name}" is not accepted (only ${[...ALLOWED_PARAMETERS].join(', ')}; files on the gateway such as sslcert, sslkey or sslrootcert cannot be named)`;
    }
    if (name === 'sslmode' && !SSL_MODES.has(parameter)) return `sslmode must be one of ${[...SSL_MODES].join(', ')}`;
  }
  return undefined;
}
