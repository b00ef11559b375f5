import type { Store } from '../store/db.ts';
import { ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { isoIn, newToken, tokenHash } from './tokens.ts';
import { roleOf } from '../org/roles.ts';

/**
 * One-time sign-in links for headless servers (`flowgate open`): whoever can
 * run the CLI on the data directory may open a browser session as an
 * organization's owner. The token lives only in the link (the store keeps its
 * SHA-256); it works once, within five minutes.
 */

export const SIGN_IN_LINK_TTL_MS = 5 * 60 * 1000;

/** Where the link lands: a dashboard page that POSTs the token, so a link scanner's GET consumes nothing. The token rides in the fragment, which browsers never send to a server or put in a Referer. */
export const signInLinkUrl = (baseUrl: string, token: string) => `${baseUrl}/app/link#token=${token}`;

export async function createSignInLink(store: Store, input: { userId: string; organizationId: string }): Promise<{ token: string; expiresAt: string }> {
  const token = newToken();
  const expiresAt = isoIn(SIGN_IN_LINK_TTL_MS);
  await store
    .insertInto('sign_in_links')
    .values({
      token_hash: tokenHash(token),
      user_id: input.userId,
      organization_id: input.organizationId,
      created_at: nowIso(),
      expires_at: expiresAt,
      used_at: null,
    })
    .execute();
  return { token, expiresAt };
}

/** Marks the link used and returns whom it signs in; one compare-and-set, so two concurrent uses cannot both succeed. */
export async function consumeSignInLink(store: Store, token: string): Promise<{ userId: string; organizationId: string }> {
  const now = nowIso();
  const row = await store
    .updateTable('sign_in_links')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash(token))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['user_id', 'organization_id'])
    .executeTakeFirst();
  if (!row) {
    throw new ServiceError(401, 'sign_in_link_invalid', 'This sign-in link is unknown, expired or already used.', {
      message: 'Sign-in links work once, within 5 minutes. Run `flowgate open` on the server again for a new one.',
    });
  }
  // The membership may have ended since the link was minted.
  if (!(await roleOf(store, row.organization_id, row.user_id)))
    throw new ServiceError(401, 'sign_in_link_invalid', 'The user of this sign-in link is no longer a member of its organization.');
  return { userId: row.user_id, organizationId: row.organization_id };
}
