/**
 * The one error type domain code throws. It carries everything the edges need
 * to render it (HTTP status, machine code, human message, extra fields) and
 * nothing about HTTP or MCP themselves.
 */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** Response headers the error needs (Retry-After, WWW-Authenticate, ...). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  /** The JSON body every edge renders: `{error, code, ...details}`. */
  toBody(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.details };
  }
}

export const badRequest = (code: string, message: string, details?: Record<string, unknown>) => new ServiceError(400, code, message, details);

export const notFound = (message: string, details?: Record<string, unknown>) => new ServiceError(404, 'not_found', message, details);

export const isServiceError = (value: unknown): value is ServiceError => value instanceof ServiceError;
