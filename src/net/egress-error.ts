/** Why an outbound request failed; messages are written for the agent reading the run's error. */
export type EgressErrorKind =
  | 'blocked' // the egress policy refused the address (also at a redirect hop)
  | 'timeout' // the total time limit passed (connect + headers + body, all hops)
  | 'too_large' // the response body exceeded the size cap
  | 'network' // DNS, connection, TLS or protocol failure
  | 'redirects' // more redirects than allowed
  | 'invalid_url' // not an absolute http(s) URL, or a bad Location on a redirect
  | 'invalid_request' // a header name or value Node refuses to send
  | 'aborted'; // the caller's signal fired (run cancelled)

export class EgressError extends Error {
  constructor(
    readonly kind: EgressErrorKind,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'EgressError';
  }
}

export const isEgressError = (value: unknown): value is EgressError => value instanceof EgressError;
