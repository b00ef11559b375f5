import { z } from 'zod';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { requireStepUp, STEP_UP_PROOF_FIELDS, stepUpProofFields } from '../src/auth/step-up.ts';
import { clearedSessionCookie } from '../src/auth/session-cookie.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { ServiceError } from '../src/errors.ts';

/** The signed-in user's browser sessions: list them, end one (another one behind step-up `session_revoke`). */

export const listSessions = defineTool({
  name: 'list_sessions',
  title: 'List your sessions',
  description: 'Your live browser sessions, newest first, with where they were opened; `current` marks the one making this request.',
  scope: 'session',
  input: z.object({}),
  output: z.array(
    z.object({
      id: z.string(),
      current: z.boolean(),
      organizationId: z.string().describe('The active organization of that session'),
      ip: z.string().nullable(),
      userAgent: z.string().nullable(),
      createdAt: z.string(),
      lastSeenAt: z.string(),
      expiresAt: z.string(),
    }),
  ),
  rest: { method: 'GET', path: '/api/auth/sessions' },
  mcp: false,
  async handler(_input, ctx) {
    const principal = requirePrincipal(ctx);
    const sessions = await ctx.services.sessions.list(principal.userId);
    return sessions.map((s) => ({
      id: s.id,
      current: s.id === principal.keyId,
      organizationId: s.organizationId,
      ip: s.ip,
      userAgent: s.userAgent,
      createdAt: s.createdAt,
      lastSeenAt: s.lastSeenAt,
      expiresAt: s.expiresAt,
    }));
  },
});

export const revokeSession = defineTool({
  name: 'revoke_session',
  title: 'End a session',
  description:
    'Ends one of your sessions. Ending the current one is signing out (no step-up); ending another is behind step-up (action session_revoke): the first call answers 401 signature_required with a `challenge`, repeat with `signature`.',
  scope: 'session',
  input: z.object({ sessionId: z.string().min(1).max(100), ...stepUpProofFields }),
  output: z.object({ revoked: z.literal(true), current: z.boolean() }),
  rest: { method: 'DELETE', path: '/api/auth/sessions/:sessionId', body: STEP_UP_PROOF_FIELDS },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { services } = ctx;
    const current = input.sessionId === principal.keyId;
    // Only the user's own live sessions exist here: another user's id answers like an unknown one.
    if (!current && !(await services.sessions.list(principal.userId)).some((s) => s.id === input.sessionId)) {
      throw new ServiceError(404, 'not_found', `No live session ${JSON.stringify(input.sessionId)} of yours; GET /api/auth/sessions lists them.`);
    }
    if (!current) await requireStepUp(services, principal, 'session_revoke', input, ctx.ip);
    if (!(await services.sessions.revoke(principal.userId, input.sessionId))) {
      throw new ServiceError(404, 'not_found', `No live session ${JSON.stringify(input.sessionId)} of yours.`);
    }
    await recordAudit(services.store, {
      organizationId: principal.organizationId,
      actor: principal,
      action: current ? 'sign_out' : 'session_revoked',
      target: input.sessionId,
      ip: ctx.ip,
    });
    if (current) ctx.setHeader('Set-Cookie', clearedSessionCookie(services.config.baseUrl));
    return { revoked: true as const, current };
  },
});

export const sessionTools = [listSessions, revokeSession];
