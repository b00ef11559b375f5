import { getAddress } from 'viem';
import type { LocalAccount } from 'viem';
import { newId, nowIso } from '../../src/ids.ts';
import { walletEmail } from '../../src/org/accounts.ts';
import type { Role } from '../../src/auth/principal.ts';
import type { TestGateway } from './gateway.ts';

/**
 * Members written straight into the store (until invitations exist): a user
 * whose primary wallet is `account`, with `role` in `organizationId`. A later
 * wallet sign-in of `account` finds this user and its first membership.
 */
export async function addMember(gw: TestGateway, organizationId: string, account: Pick<LocalAccount, 'address'>, role: Role): Promise<{ userId: string }> {
  const { store, config } = gw.gateway.services;
  const walletAddress = getAddress(account.address);
  const now = nowIso();
  let user = await store.selectFrom('users').select('id').where('wallet_address', '=', walletAddress).executeTakeFirst();
  if (!user) {
    user = { id: newId() };
    await store
      .insertInto('users')
      .values({
        id: user.id,
        email: walletEmail(walletAddress, config.walletEmailDomain),
        provider_id: 'siwe',
        created_at: now,
        wallet_address: walletAddress,
        email_verified_at: null,
        password_hash: null,
        totp_secret_encrypted: null,
        totp_enabled_at: null,
      })
      .execute();
  }
  await store.insertInto('memberships').values({ organization_id: organizationId, user_id: user.id, role, created_at: now }).execute();
  return { userId: user.id };
}
