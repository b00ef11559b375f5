import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { ServiceError } from '../errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeepMessage } from '../json-depth.ts';

/**
 * The JSON body reader of both edges (REST and MCP): express's parser, then
 * one nesting limit, so a body nested thousands deep is a 400 here instead of
 * a stack overflow in whatever reads it later.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({
    limit: limitBytes,
    type: ['application/json', 'application/*+json'],
    // The parser decodes bytes that are not UTF-8 as U+FFFD: a name sent that way was stored as replacement characters.
    verify: (req, _res, buf, encoding) => {
      if (/^utf-?8$/i.test(encoding) && !isUtf8(buf)) (req as { invalidUtf8?: true }).invalidUtf8 = true;
    },
  });
  return (req, res, next) => {
    // No body (type-is's test, as the parser makes it): nothing to read, and a GET need not pass through the parser.
    if (req.headers['transfer-encoding'] === undefined && req.headers['content-length'] === undefined) return next();
    parse(req, res, (error?: unknown) => {
      if (error) return next(error);
      if ((req as { invalidUtf8?: true }).invalidUtf8) {
        req.body = undefined;
        return next(new ServiceError(400, 'invalid_json', 'The request body is not valid UTF-8: send JSON text encoded as UTF-8.'));
      }
      if (req.body !== undefined && nestsDeeperThan(req.body, MAX_JSON_DEPTH)) {
        req.body = undefined;
        return next(new ServiceError(400, 'invalid_json', tooDeepMessage('The JSON body'), { limit: MAX_JSON_DEPTH }));
      }
      next();
    });
  };
}
