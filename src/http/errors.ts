import type { ErrorRequestHandler, Response } from 'express';
import { isServiceError, ServiceError } from '../errors.ts';
import { storeUnavailable } from '../store-unavailable.ts';

/** The one place REST errors become responses: `{error, code, ...}` JSON, never a stack trace. */

export function sendError(res: Response, error: ServiceError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  // As res.json, without the ETag express would hash the body for: an error is not a copy to revalidate.
  const body = Buffer.from(JSON.stringify(error.toBody()));
  res.status(error.status);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/** Maps body-parser and other framework errors to typed ones. */
function fromFrameworkError(error: { type?: string; status?: number; limit?: number; message?: string }): ServiceError | undefined {
  switch (error.type) {
    case 'entity.parse.failed':
      return new ServiceError(
        400,
        'invalid_json',
        `Malformed JSON body: ${error.message ?? 'could not parse'}. Send a valid JSON object with Content-Type: application/json.`,
      );
    case 'entity.too.large':
      return new ServiceError(413, 'payload_too_large', `Request body exceeds the ${error.limit ?? ''} byte limit.`.replace('  ', ' '));
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ServiceError(415, 'unsupported_media_type', 'Unsupported body encoding; send UTF-8 JSON.');
    case 'request.aborted':
      return new ServiceError(400, 'request_aborted', 'The request body was not fully received.');
  }
  if (typeof error.status === 'number' && error.status >= 400 && error.status < 500) {
    return new ServiceError(error.status, 'bad_request', error.message ?? 'Bad request');
  }
  return undefined;
}

export const renderErrors: ErrorRequestHandler = (error, _req, res, _next) => {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (isServiceError(error)) return sendError(res, error);
  const mapped = fromFrameworkError(error ?? {}) ?? storeUnavailable(error);
  if (mapped) return sendError(res, mapped);
  console.error('[flowgate] unhandled error:', error);
  sendError(res, new ServiceError(500, 'internal_error', 'The gateway failed to handle this request; it has been logged.'));
};
