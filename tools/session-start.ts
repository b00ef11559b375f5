import type { ToolContext } from './define.ts';
import { sessionCookie } from '../src/auth/session-cookie.ts';
import { recordAudit } from '../src/org/audit-log.ts';

/**
 * The end of every successful sign-in (wallet or e-mail): a server-side
 * session in the account's organization, an audit row, and the cookie.
 */
export async function startSession(
  ctx: ToolContext,
  account: { userId: string; organizationId: string; created: boolean; target: string; details: Record<string, string | number | boolean | null> },
) {
  const { services } = ctx;
  const { token, session } = await services.sessions.create({
    userId: account.userId,
    organizationId: account.organizationId,
    ip: ctx.ip,
    userAgent: ctx.request?.headers['user-agent'],
  });
  await recordAudit(services.store, {
    organizationId: account.organizationId,
    actor: { kind: 'session', userId: account.userId, keyId: session.id },
    action: account.created ? 'sign_up' : 'sign_in',
    target: account.target,
    ip: ctx.ip,
    details: account.details,
  });
  ctx.setHeader('Set-Cookie', sessionCookie(services.config.baseUrl, token));
  return { id: session.id, expiresAt: session.expiresAt };
}
