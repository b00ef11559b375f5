import type { Store } from '../store/db.ts';
import type { Principal, Role } from '../auth/principal.ts';
import type { SessionService } from '../auth/sessions.ts';
import type { KeyService } from '../auth/keys.ts';
import { notFound, ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { recordAudit } from './audit-log.ts';
import { requireRole, roleOf } from './roles.ts';

/**
 * Members of an organization and their roles (owner ⊃ admin ⊃ member).
 * Admins manage members and admins; only owners grant or take the owner
 * role; the last owner can never be demoted or removed. Each change and its
 * audit row are written in one transaction.
 */

export interface Member {
  userId: string;
  role: Role;
  email: string | null;
  walletAddress: string | null;
  joinedAt: string;
}

type Actor = Pick<Principal, 'organizationId' | 'userId' | 'kind' | 'keyId'>;

export async function listMembers(store: Store, organizationId: string): Promise<Member[]> {
  const rows = await store
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .select(['users.id', 'memberships.role', 'users.email', 'users.wallet_address', 'memberships.created_at'])
    .where('memberships.organization_id', '=', organizationId)
    .orderBy('memberships.created_at')
    .orderBy('users.id')
    .execute();
  return rows.map((r) => ({ userId: r.id, role: r.role, email: r.email, walletAddress: r.wallet_address, joinedAt: r.created_at }));
}

const lastOwner = () =>
  new ServiceError(409, 'last_owner', 'This is the last owner of the organization: make another member owner first.', {
    message: 'An organization always keeps at least one owner; promote another member to owner, then retry.',
  });

/** Throws 409 last_owner (rolling the caller's transaction back) when the organization has no owner left. */
async function assertOwnerRemains(trx: Store, organizationId: string): Promise<void> {
  const owner = await trx
    .selectFrom('memberships')
    .select('user_id')
    .where('organization_id', '=', organizationId)
    .where('role', '=', 'owner')
    .executeTakeFirst();
  if (!owner) throw lastOwner();
}

/** The target's current role in the actor's organization; another organization's user answers like an unknown one. */
async function targetRole(store: Store, organizationId: string, userId: string): Promise<Role> {
  const role = await roleOf(store, organizationId, userId);
  if (role === undefined) throw notFound(`No member ${userId} in this organization.`);
  return role;
}

export async function changeMemberRole(store: Store, actor: Actor, input: { userId: string; role: Role; ip: string }): Promise<Member> {
  const actorRole = await requireRole(store, actor, 'admin');
  const current = await targetRole(store, actor.organizationId, input.userId);
  // Granting or taking the owner role is the owners' decision.
  if ((current === 'owner' || input.role === 'owner') && actorRole !== 'owner') await requireRole(store, actor, 'owner');
  if (current !== input.role) {
    await store.transaction().execute(async (trx) => {
      await trx
        .updateTable('memberships')
        .set({ role: input.role })
        .where('organization_id', '=', actor.organizationId)
        .where('user_id', '=', input.userId)
        .execute();
      await assertOwnerRemains(trx, actor.organizationId);
      await recordAudit(trx, {
        organizationId: actor.organizationId,
        actor,
        action: 'role_changed',
        target: input.userId,
        ip: input.ip,
        details: { from: current, to: input.role },
      });
    });
  }
  const member = (await listMembers(store, actor.organizationId)).find((m) => m.userId === input.userId);
  if (!member) throw notFound(`No member ${input.userId} in this organization.`);
  return member;
}

/**
 * Removes a member (or lets any member leave: removing yourself needs no
 * role). Their sessions in this organization end and the API keys they
 * created there (`svc_` and `wfb_`) are revoked, in the same transaction: a key must not
 * outlive its creator's membership.
 */
export async function removeMember(
  store: Store,
  keys: Pick<KeyService, 'revoke'>,
  actor: Actor,
  input: { userId: string; ip: string },
): Promise<{ userId: string; role: Role; sessionsEnded: number; keysRevoked: number; oauthGrantsRevoked: number }> {
  const self = input.userId === actor.userId;
  const actorRole = self ? await targetRole(store, actor.organizationId, actor.userId) : await requireRole(store, actor, 'admin');
  const role = await targetRole(store, actor.organizationId, input.userId);
  if (role === 'owner' && actorRole !== 'owner') await requireRole(store, actor, 'owner');
  const { result, keyIds } = await store.transaction().execute(async (trx) => {
    await trx.deleteFrom('memberships').where('organization_id', '=', actor.organizationId).where('user_id', '=', input.userId).execute();
    await assertOwnerRemains(trx, actor.organizationId);
    const now = nowIso();
    const sessions = await trx
      .updateTable('sessions')
      .set({ revoked_at: now })
      .where('organization_id', '=', actor.organizationId)
      .where('user_id', '=', input.userId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    const liveKeys = trx
      .selectFrom('api_keys')
      .select('id')
      .where('organization_id', '=', actor.organizationId)
      .where('user_id', '=', input.userId)
      .where('revoked_at', 'is', null);
    const keyIds = (await liveKeys.execute()).map((k) => k.id);
    if (keyIds.length > 0) await trx.updateTable('api_keys').set({ revoked_at: now }).where('id', 'in', keyIds).execute();
    const webhookKeyIds = (
      await trx
        .selectFrom('user_api_keys')
        .select('id')
        .where('organization_id', '=', actor.organizationId)
        .where('user_id', '=', input.userId)
        .where('revoked_at', 'is', null)
        .execute()
    ).map((k) => k.id);
    if (webhookKeyIds.length > 0) await trx.updateTable('user_api_keys').set({ revoked_at: now }).where('id', 'in', webhookKeyIds).execute();
    // OAuth clients the member connected: their access tokens already stopped with the membership, but a refresh token
    // renewed the grant, and it answered again once the person was re-invited.
    const grants = await trx
      .selectFrom('oauth_grants')
      .select(['id', 'client_id'])
      .where('organization_id', '=', actor.organizationId)
      .where('user_id', '=', input.userId)
      .where('revoked_at', 'is', null)
      .execute();
    if (grants.length > 0) {
      await trx
        .updateTable('oauth_grants')
        .set({ revoked_at: now, revoked_reason: 'member_removed' })
        .where(
          'id',
          'in',
          grants.map((g) => g.id),
        )
        .execute();
    }
    for (const grant of grants) {
      await recordAudit(trx, {
        organizationId: actor.organizationId,
        actor,
        action: 'oauth_grant_revoked',
        target: grant.id,
        ip: input.ip,
        details: { clientId: grant.client_id.slice(0, 200), reason: 'member_removed' },
      });
    }
    // Each key gets its own key_revoked row, so a key's history reads whole in the log.
    for (const [kind, ids] of [
      ['svc', keyIds],
      ['wfb', webhookKeyIds],
    ] as const) {
      for (const id of ids) {
        await recordAudit(trx, {
          organizationId: actor.organizationId,
          actor,
          action: 'key_revoked',
          target: id,
          ip: input.ip,
          details: { kind, reason: 'member_removed' },
        });
      }
    }
    const result = {
      userId: input.userId,
      role,
      sessionsEnded: Number(sessions.numUpdatedRows),
      keysRevoked: keyIds.length + webhookKeyIds.length,
      oauthGrantsRevoked: grants.length,
    };
    await recordAudit(trx, {
      organizationId: actor.organizationId,
      actor,
      action: 'member_removed',
      target: input.userId,
      ip: input.ip,
      details: { role, self, sessionsEnded: result.sessionsEnded, keysRevoked: result.keysRevoked, oauthGrantsRevoked: result.oauthGrantsRevoked },
    });
    return { result, keyIds };
  });
  // Already revoked in the store; this makes the key cache of this process forget them now rather than within KEY_RECHECK_MS.
  for (const keyId of keyIds) await keys.revoke(actor.organizationId, keyId);
  return result;
}

/** Makes another organization the session's active one; an organization the user is not a member of answers like an unknown one. */
export async function switchOrganization(
  store: Store,
  sessions: Pick<SessionService, 'switchOrganization'>,
  actor: Actor,
  input: { organizationId: string; ip: string },
): Promise<{ id: string; slug: string; name: string; role: Role }> {
  const row = await store
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
    .select(['organizations.id', 'organizations.slug', 'organizations.name', 'memberships.role'])
    .where('memberships.user_id', '=', actor.userId)
    .where('memberships.organization_id', '=', input.organizationId)
    .executeTakeFirst();
  if (!row) throw notFound(`No organization ${input.organizationId} among yours.`);
  await sessions.switchOrganization(actor.keyId, row.id);
  // Recorded in the organization entered only: its admins need not learn where the user came from.
  await recordAudit(store, { organizationId: row.id, actor, action: 'organization_switched', target: row.id, ip: input.ip });
  return row;
}
