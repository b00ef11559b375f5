import type { Insertable } from 'kysely';
import { isUniqueViolation, type Store } from '../store/db.ts';
import type { UsersTable } from '../store/schema.ts';
import type { SecretBox } from '../wallets/crypto.ts';
import { getWalletAddresses, provisionWallet, type WalletAddresses } from '../wallets/wallets.ts';
import { newId, nowIso } from '../ids.ts';

/** Organizations, their owner users and wallets. */

export const DEFAULT_ORGANIZATION_SLUG = 'default';

export interface Organization {
  id: string;
  slug: string;
  name: string;
  createdAt: string;
}

export interface User {
  id: string;
  email: string | null;
  providerId: string;
  createdAt: string;
}

export interface OrganizationService {
  /** Returns the organization with this slug, creating it (with an owner user and a wallet) when missing. */
  ensure(slug: string): Promise<{ organization: Organization; owner: User; created: boolean }>;
  get(organizationId: string): Promise<Organization | undefined>;
  getUser(userId: string): Promise<User | undefined>;
  wallet(organizationId: string): Promise<WalletAddresses | undefined>;
}

/**
 * A new organization with `user` as its owner and a fresh wallet, as the
 * first start does for the local owner and the first sign-in for a new user.
 * Run it inside a transaction: a crash never leaves an organization without
 * its owner or wallet. The user row is inserted unless `user.existing`.
 */
export async function createOrganizationWithOwner(
  trx: Store,
  box: SecretBox,
  input: { slug: string; name: string; user: Insertable<UsersTable> & { existing?: boolean } },
): Promise<Organization> {
  const now = nowIso();
  const organization = { id: newId(), slug: input.slug, name: input.name, created_at: now };
  const { existing, ...user } = input.user;
  await trx.insertInto('organizations').values(organization).execute();
  if (!existing) await trx.insertInto('users').values(user).execute();
  await trx.insertInto('memberships').values({ organization_id: organization.id, user_id: user.id, role: 'owner', created_at: now }).execute();
  await provisionWallet(trx, box, organization.id);
  return { id: organization.id, slug: organization.slug, name: organization.name, createdAt: now };
}

export function createOrganizationService(store: Store, box: SecretBox): OrganizationService {
  const toOrganization = (row: { id: string; slug: string; name: string; created_at: string }): Organization => ({
    id: row.id,
    slug: row.slug,
    name: row.name,
    createdAt: row.created_at,
  });

  async function owner(organizationId: string): Promise<User> {
    const row = await store
      .selectFrom('memberships')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select(['users.id', 'users.email', 'users.provider_id', 'users.created_at'])
      .where('memberships.organization_id', '=', organizationId)
      .where('memberships.role', '=', 'owner')
      .orderBy('memberships.created_at')
      .executeTakeFirstOrThrow();
    return { id: row.id, email: row.email, providerId: row.provider_id, createdAt: row.created_at };
  }

  return {
    async ensure(slug) {
      const existing = await store.selectFrom('organizations').selectAll().where('slug', '=', slug).executeTakeFirst();
      if (existing) return { organization: toOrganization(existing), owner: await owner(existing.id), created: false };

      const user = { id: newId(), email: null, provider_id: 'local', created_at: nowIso() };
      try {
        const organization = await store
          .transaction()
          .execute((trx) => createOrganizationWithOwner(trx, box, { slug, name: slug === DEFAULT_ORGANIZATION_SLUG ? 'Default organization' : slug, user }));
        return { organization, owner: { id: user.id, email: user.email, providerId: user.provider_id, createdAt: user.created_at }, created: true };
      } catch (error) {
        // Another process created it between the read above and this write (two starting on one data directory).
        if (!isUniqueViolation(error)) throw error;
        const made = await store.selectFrom('organizations').selectAll().where('slug', '=', slug).executeTakeFirstOrThrow();
        return { organization: toOrganization(made), owner: await owner(made.id), created: false };
      }
    },

    async get(organizationId) {
      const row = await store.selectFrom('organizations').selectAll().where('id', '=', organizationId).executeTakeFirst();
      return row && toOrganization(row);
    },

    async getUser(userId) {
      const row = await store.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
      return row && { id: row.id, email: row.email, providerId: row.provider_id, createdAt: row.created_at };
    },

    wallet: (organizationId) => getWalletAddresses(store, organizationId),
  };
}
