import type { Store } from '../store/db.ts';
import { assertRoom } from './quotas.ts';
import type { Principal, Role } from '../auth/principal.ts';
import type { InvitationsTable } from '../store/schema.ts';
import { notFound, ServiceError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { isoIn, newToken, tokenHash } from '../auth/tokens.ts';
import { recordAudit } from './audit-log.ts';
import { requireRole, roleOf, roleRank } from './roles.ts';

/**
 * Invitations into an organization: a one-time token (shown once, stored as
 * its SHA-256) that a signed-in user redeems for a membership with the
 * invited role. Admins invite members and admins; only owners invite owners.
 */

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
const TOKEN_PREFIX = 'inv_';

export type InvitationStatus = 'pending' | 'accepted' | 'revoked' | 'expired';

export interface Invitation {
  id: string;
  role: Role;
  email: string | null;
  status: InvitationStatus;
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
  acceptedAt: string | null;
  acceptedBy: string | null;
  revokedAt: string | null;
}

type Actor = Pick<Principal, 'organizationId' | 'userId' | 'kind' | 'keyId'>;

const statusOf = (row: InvitationsTable, now = nowIso()): InvitationStatus =>
  row.accepted_at ? 'accepted' : row.revoked_at ? 'revoked' : row.expires_at <= now ? 'expired' : 'pending';

const toInvitation = (row: InvitationsTable): Invitation => ({
  id: row.id,
  role: row.role,
  email: row.email,
  status: statusOf(row),
  invitedBy: row.invited_by,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  acceptedAt: row.accepted_at,
  acceptedBy: row.accepted_by,
  revokedAt: row.revoked_at,
});

/** The role an inviter needs to grant `role`: owners grant owner, admins the rest. */
const granting = (role: Role): 'owner' | 'admin' => (role === 'owner' ? 'owner' : 'admin');

export async function createInvitation(
  store: Store,
  actor: Actor,
  input: {
    role: Role;
    email?: string;
    ip: string;
    /** Pending invitations the organization may hold (config.quotas.pendingInvitations); unset: no bound. */ quota?: number;
    /** Members the organization may hold (config.quotas.members): a full one invites nobody. */ members?: number;
  },
): Promise<{ invitation: Invitation; token: string }> {
  await requireRole(store, actor, granting(input.role));
  const token = TOKEN_PREFIX + newToken();
  const row: InvitationsTable = {
    id: newId(),
    organization_id: actor.organizationId,
    token_hash: tokenHash(token),
    role: input.role,
    email: input.email?.toLowerCase() ?? null,
    invited_by: actor.userId,
    created_at: nowIso(),
    expires_at: isoIn(INVITATION_TTL_MS),
    accepted_at: null,
    accepted_by: null,
    revoked_at: null,
  };
  await store.transaction().execute(async (trx) => {
    await assertRoom(trx, 'members', input.members, actor.organizationId);
    await assertRoom(trx, 'pendingInvitations', input.quota, actor.organizationId);
    await trx.insertInto('invitations').values(row).execute();
    await recordAudit(trx, {
      organizationId: actor.organizationId,
      actor,
      action: 'invitation_created',
      target: row.id,
      ip: input.ip,
      details: { role: row.role, email: row.email, expiresAt: row.expires_at },
    });
  });
  return { invitation: toInvitation(row), token };
}

export async function listInvitations(store: Store, actor: Actor): Promise<Invitation[]> {
  await requireRole(store, actor, 'admin');
  const rows = await store.selectFrom('invitations').selectAll().where('organization_id', '=', actor.organizationId).orderBy('created_at', 'desc').execute();
  return rows.map(toInvitation);
}

export async function revokeInvitation(store: Store, actor: Actor, input: { invitationId: string; ip: string }): Promise<Invitation> {
  await requireRole(store, actor, 'admin');
  const row = await store
    .selectFrom('invitations')
    .selectAll()
    .where('id', '=', input.invitationId)
    .where('organization_id', '=', actor.organizationId)
    .executeTakeFirst();
  if (!row) throw notFound(`No invitation ${input.invitationId} in this organization.`);
  if (row.accepted_at)
    throw new ServiceError(409, 'conflict', 'This invitation was already accepted; remove the member instead (DELETE /api/organization/members/{userId}).');
  if (row.revoked_at) return toInvitation(row);
  const revokedAt = nowIso();
  await store.transaction().execute(async (trx) => {
    await trx.updateTable('invitations').set({ revoked_at: revokedAt }).where('id', '=', row.id).where('revoked_at', 'is', null).execute();
    await recordAudit(trx, {
      organizationId: actor.organizationId,
      actor,
      action: 'invitation_revoked',
      target: row.id,
      ip: input.ip,
      details: { role: row.role },
    });
  });
  return toInvitation({ ...row, revoked_at: revokedAt });
}

const alreadyMember = () => new ServiceError(409, 'already_member', 'You are already a member of this organization; the invitation was left unused.');

const invalid = (why: string) =>
  new ServiceError(400, 'invitation_invalid', `This invitation cannot be used: ${why}.`, { message: 'Ask an admin of the organization for a new invitation.' });

/**
 * Redeems an invitation for the signed-in user. Expired, used, revoked and
 * unknown tokens all answer 400 invitation_invalid, the message saying which.
 * The token is consumed in the same transaction that adds the membership.
 */
export async function acceptInvitation(
  store: Store,
  actor: Pick<Principal, 'userId' | 'kind' | 'keyId'>,
  input: { token: string; ip: string; /** Members the organization may hold (config.quotas.members); unset: no bound. */ members?: number },
): Promise<{ organization: { id: string; slug: string; name: string }; role: Role }> {
  const row = await store.selectFrom('invitations').selectAll().where('token_hash', '=', tokenHash(input.token)).executeTakeFirst();
  if (!row) throw invalid('no such invitation (check that the whole token was copied)');
  const status = statusOf(row);
  if (status === 'accepted') throw invalid('it was already used');
  if (status === 'revoked') throw invalid('it was revoked');
  if (status === 'expired') throw invalid(`it expired at ${row.expires_at}`);

  // The inviter must still be allowed to grant the role: a removed or demoted admin's invitations die with the right.
  const inviterRole = await roleOf(store, row.organization_id, row.invited_by);
  if (inviterRole === undefined || roleRank(inviterRole) < roleRank(granting(row.role))) throw invalid('its inviter may no longer grant this role');

  if (row.email !== null) {
    const user = await store.selectFrom('users').select(['email', 'email_verified_at']).where('id', '=', actor.userId).executeTakeFirst();
    if (!user?.email || user.email.toLowerCase() !== row.email || !user.email_verified_at) {
      throw new ServiceError(403, 'invitation_wrong_recipient', 'This invitation is for another e-mail address.', {
        message: 'It can only be accepted by a user signed in with that verified e-mail address.',
      });
    }
  }
  if ((await roleOf(store, row.organization_id, actor.userId)) !== undefined) {
    throw alreadyMember();
  }

  await store.transaction().execute(async (trx) => {
    const now = nowIso();
    const consumed = await trx
      .updateTable('invitations')
      .set({ accepted_at: now, accepted_by: actor.userId })
      .where('id', '=', row.id)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    if (Number(consumed.numUpdatedRows) !== 1) throw invalid('it was used or revoked a moment ago');
    // Refused, the whole transaction rolls back: the invitation stays usable once there is room.
    await assertRoom(trx, 'members', input.members, row.organization_id);
    const joined = await trx
      .insertInto('memberships')
      .values({ organization_id: row.organization_id, user_id: actor.userId, role: row.role, created_at: now })
      .onConflict((oc) => oc.columns(['organization_id', 'user_id']).doNothing())
      .executeTakeFirst();
    if (Number(joined.numInsertedOrUpdatedRows ?? 0n) !== 1) throw alreadyMember();
    await recordAudit(trx, {
      organizationId: row.organization_id,
      actor,
      action: 'invitation_accepted',
      target: row.id,
      ip: input.ip,
      details: { role: row.role },
    });
  });
  const organization = await store.selectFrom('organizations').select(['id', 'slug', 'name']).where('id', '=', row.organization_id).executeTakeFirstOrThrow();
  return { organization, role: row.role };
}
