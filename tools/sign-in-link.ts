import { z } from 'zod';
import { defineTool } from './define.ts';
import { spendPerIp } from './auth.ts';
import { startSession } from './session-start.ts';
import { consumeSignInLink } from '../src/auth/sign-in-links.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { isServiceError } from '../src/errors.ts';

/** The landing half of `flowgate open`: the dashboard page POSTs the link's token here and gets a session cookie. */

export const signInWithLink = defineTool({
  name: 'sign_in_with_link',
  title: 'Sign in with a one-time link',
  description:
    'Consumes a one-time sign-in link minted by `flowgate open` on the server (single use, valid 5 minutes) and sets the session cookie for the organization owner it names. The dashboard page at /app/link calls this; the token is never sent in a URL the server sees.',
  scope: 'public',
  input: z.object({ token: z.string().min(16).max(200).describe('The token from the link fragment (#token=...)') }),
  output: z.object({
    user: z.object({ id: z.string() }),
    organization: z.object({ id: z.string() }),
    session: z.object({ id: z.string(), expiresAt: z.string() }),
  }),
  rest: { method: 'POST', path: '/api/auth/link' },
  mcp: false,
  async handler(input, ctx) {
    // Guessing a 256-bit token is hopeless, but each attempt still costs the caller's sign-in budget.
    await spendPerIp(ctx, 'siweVerifyPerIp');
    const { store } = ctx.services;
    let account: { userId: string; organizationId: string };
    try {
      account = await consumeSignInLink(store, input.token);
    } catch (error) {
      if (isServiceError(error)) {
        await recordAudit(store, {
          organizationId: null,
          actor: null,
          action: 'sign_in_failed',
          outcome: 'failure',
          ip: ctx.ip,
          details: { method: 'link', reason: error.message },
        });
      }
      throw error;
    }
    const session = await startSession(ctx, { ...account, created: false, target: account.userId, details: { method: 'link' } });
    return { user: { id: account.userId }, organization: { id: account.organizationId }, session };
  },
});

export const signInLinkTools = [signInWithLink];
