import type { RequestHandler } from 'express';
import { hostHeaderValidation } from '@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js';

/** Distinct `Host` values remembered as allowed: a client can vary the port, so the set is bounded. */
const REMEMBERED = 64;

/**
 * The MCP SDK's DNS-rebinding check (the Host header's hostname must be one
 * of `allowedHostnames`), with the `Host` values it let through remembered:
 * a client sends the same one on every request, and the check parses a URL
 * each time. Only allowed values are remembered, so a refusal is always the
 * SDK's own answer.
 */
export function hostHeaderCheck(allowedHostnames: string[]): RequestHandler {
  const check = hostHeaderValidation(allowedHostnames);
  const allowed = new Set<string>();
  return (req, res, next) => {
    const host = req.headers.host;
    if (host !== undefined && allowed.has(host)) return next();
    check(req, res, () => {
      if (host !== undefined && allowed.size < REMEMBERED) allowed.add(host);
      next();
    });
  };
}
