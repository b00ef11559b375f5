import { getAddress } from 'viem';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../wallets/crypto.ts';
import { newId, nowIso } from '../ids.ts';
import { createOrganizationWithOwner, type Organization } from './organizations.ts';
import type { Role } from '../auth/principal.ts';

/**
 * Accounts behind sign-in: a wallet's user is found by its primary wallet
 * address; the first sign-in creates the user, an organization it owns and
 * that organization's wallet, in one transaction.
 */

export interface SignedInAccount {
  userId: string;
  walletAddress: `0x${string}`;
  /** The organization a new session starts in: the user's earliest membership. */
  organization: Organization & { role: Role };
  created: boolean;
}

/** The synthetic e-mail of a wallet account (SPEC Authentication rule 7): never delivered to. */
export const walletEmail = (address: string, domain: string) => `${address.toLowerCase()}@${domain}`;

/** The organization a new session of this user starts in: the earliest membership. */
export async function firstMembership(store: Store, userId: string) {
  return store
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
    .select(['organizations.id', 'organizations.slug', 'organizations.name', 'organizations.created_at', 'memberships.role'])
    .where('memberships.user_id', '=', userId)
    .orderBy('memberships.created_at')
    .executeTakeFirst();
}

export async function findOrCreateWalletAccount(store: Store, box: SecretBox, input: { address: string; emailDomain: string }): Promise<SignedInAccount> {
  const walletAddress = getAddress(input.address);
  // One transaction: two first sign-ins of one wallet at once create one account (the second sees the first's user).
  return store.transaction().execute(async (trx) => {
    const existing = await trx.selectFrom('users').select('id').where('wallet_address', '=', walletAddress).executeTakeFirst();
    const membership = existing && (await firstMembership(trx, existing.id));
    if (existing && membership) {
      const organization = { id: membership.id, slug: membership.slug, name: membership.name, createdAt: membership.created_at, role: membership.role };
      return { userId: existing.id, walletAddress, organization, created: false };
    }
    // A user left without any organization (every membership removed) gets a fresh one, as on a first sign-in.
    const short = walletAddress.slice(2, 10).toLowerCase();
    const taken = await trx.selectFrom('organizations').select('slug').where('slug', 'like', `wallet-${short}%`).execute();
    const slug = taken.length === 0 ? `wallet-${short}` : `wallet-${short}-${taken.length + 1}`;
    const userId = existing?.id ?? newId();
    const user = existing
      ? { id: userId, provider_id: 'siwe', created_at: nowIso(), existing: true }
      : { id: userId, email: walletEmail(walletAddress, input.emailDomain), provider_id: 'siwe', wallet_address: walletAddress, created_at: nowIso() };
    const organization = await createOrganizationWithOwner(trx, box, {
      slug,
      name: `${walletAddress.slice(0, 6)}…${walletAddress.slice(-4)}'s organization`,
      user,
    });
    return { userId, walletAddress, organization: { ...organization, role: 'owner' as const }, created: !existing };
  });
}
