import type { RequestHandler } from 'express';

/**
 * Runs `handler` (a router) only for request paths that start with one of
 * `prefixes`; every other request skips it in one comparison instead of a
 * walk through its layers. Compared ignoring case with a regular expression,
 * as express's own matching does, so the gate lets through at least every
 * path the router's routes can match.
 */
export function onlyUnder(prefixes: readonly string[], handler: RequestHandler): RequestHandler {
  // One test, with no lowercased copy of the path per gate per request.
  const under = new RegExp(`^(?:${prefixes.map((prefix) => prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`, 'i');
  return (req, res, next) => (under.test(req.path) ? handler(req, res, next) : next());
}
