import type { Store } from '../store/db.ts';
import { ServiceError } from '../errors.ts';
import { ROLES, type Principal, type Role } from '../auth/principal.ts';

/**
 * Organization roles (owner ⊃ admin ⊃ member), read from the membership at
 * the moment of the check, never from a cached principal: a demoted admin
 * loses the right on the next request.
 */

export const roleRank = (role: Role) => ROLES.indexOf(role);

export async function roleOf(store: Store, organizationId: string, userId: string): Promise<Role | undefined> {
  const row = await store
    .selectFrom('memberships')
    .select('role')
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.role;
}

/** 403 `not_admin_or_owner` unless the caller's user holds at least `minimum` in the caller's organization (SPEC Authentication rule 9). */
export async function requireRole(
  store: Store,
  principal: Pick<Principal, 'organizationId' | 'userId'>,
  minimum: Exclude<Role, 'member'> = 'admin',
): Promise<Role> {
  const role = await roleOf(store, principal.organizationId, principal.userId);
  if (role === undefined || roleRank(role) < roleRank(minimum)) {
    throw new ServiceError(
      403,
      'not_admin_or_owner',
      minimum === 'owner'
        ? `Only an owner of this organization may do this; your role is ${role ?? 'none'}.`
        : `Only an admin or owner of this organization may do this; your role is ${role ?? 'none'}. Ask an owner to change your role.`,
      { role: role ?? null, required: minimum },
    );
  }
  return role;
}
