import type { RequestHandler } from 'express';

/**
 * Runs `handler` (a router) only for request paths that start with one of
 * `prefixes`; every other request skips it in one comparison instead of a
 * walk through its layers. Compared lowercased, as express's own matching
 * ignores case, so the gate lets through at least every path the router's
 * routes can match.
 */
export function onlyUnder(prefixes: readonly string[], handler: RequestHandler): RequestHandler {
  const lowered = prefixes.map((prefix) => prefix.toLowerCase());
  return (req, res, next) => {
    const path = req.path.toLowerCase();
    return lowered.some((prefix) => path.startsWith(prefix)) ? handler(req, res, next) : next();
  };
}
