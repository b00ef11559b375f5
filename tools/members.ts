import { z } from 'zod';
import { ROLES } from '../src/auth/principal.ts';
import { changeMemberRole, listMembers, removeMember, switchOrganization } from '../src/org/members.ts';
import { acceptInvitation, createInvitation, listInvitations, revokeInvitation } from '../src/org/invitations.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/**
 * Members, roles, invitations and the active organization (issue "Identity
 * and access" item 4). Changes are session only (a person decides them);
 * the member list is also readable by organization keys. REST only: the MCP
 * tools/list budget (40 KB) is kept for operations agents run.
 */

const role = z.enum(ROLES).describe('owner, admin or member');
const userId = z.string().min(1).max(100).describe('User id from list_members');

const memberSchema = z.object({
  userId: z.string(),
  role,
  email: z.string().nullable(),
  walletAddress: z.string().nullable().describe("The user's primary wallet (signs sign-in and step-up)"),
  joinedAt: z.string(),
});

const invitationSchema = z.object({
  id: z.string(),
  role,
  email: z.string().nullable().describe('When set, only a user with this verified e-mail address can accept'),
  status: z.enum(['pending', 'accepted', 'revoked', 'expired']),
  invitedBy: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
  acceptedAt: z.string().nullable(),
  acceptedBy: z.string().nullable(),
  revokedAt: z.string().nullable(),
});

const organizationView = z.object({ id: z.string(), slug: z.string(), name: z.string(), role });

const listMembersTool = defineTool({
  name: 'list_members',
  title: 'List members',
  description: "The organization's members with their roles (owner, admin, member).",
  scope: 'mcp:read',
  input: z.object({}),
  output: z.array(memberSchema),
  rest: { method: 'GET', path: '/api/organization/members' },
  mcp: false,
  handler: (_input, ctx) => listMembers(ctx.services.store, requirePrincipal(ctx).organizationId),
});

const changeMemberRoleTool = defineTool({
  name: 'change_member_role',
  title: 'Change a member role',
  description:
    'Sets a member\'s role. Admins and owners may change roles; only owners grant or take "owner". The last owner cannot be demoted (409 last_owner).',
  scope: 'session',
  input: z.object({ userId, role }),
  output: memberSchema,
  rest: { method: 'PATCH', path: '/api/organization/members/:userId', errors: ['last_owner'] },
  rateLimit: 'objectWritesPerOrganization',
  mcp: false,
  handler: (input, ctx) => changeMemberRole(ctx.services.store, requirePrincipal(ctx), { ...input, ip: ctx.ip }),
});

const removeMemberTool = defineTool({
  name: 'remove_member',
  title: 'Remove a member',
  description: [
    'Removes a member (admins and owners; any member may remove themselves). Their sessions in this organization end, the API keys they created are revoked and the OAuth clients they connected are disconnected.',
    'Only owners remove owners; the last owner cannot be removed (409 last_owner).',
  ].join(' '),
  scope: 'session',
  input: z.object({ userId }),
  output: z.object({
    userId: z.string(),
    role,
    sessionsEnded: z.number().int().describe("The member's sessions in this organization that were ended"),
    keysRevoked: z.number().int().describe('Organization API keys the member created, revoked with the membership'),
    oauthGrantsRevoked: z.number().int().describe('OAuth clients the member connected to this organization, disconnected with the membership'),
  }),
  rest: { method: 'DELETE', path: '/api/organization/members/:userId', errors: ['last_owner'] },
  rateLimit: 'objectWritesPerOrganization',
  mcp: false,
  handler: (input, ctx) => removeMember(ctx.services.store, ctx.services.keys, requirePrincipal(ctx), { ...input, ip: ctx.ip }),
});

const createInvitationTool = defineTool({
  name: 'create_invitation',
  title: 'Invite a member',
  description: [
    'Creates an invitation with a one-time `token`, shown in this response only and valid 7 days. The invitee signs in and POSTs it to /api/invitations/accept.',
    'Admins invite members and admins; only owners invite owners. With `email`, only a user with that verified address can accept.',
  ].join(' '),
  scope: 'session',
  quotas: ['pendingInvitations', 'members'],
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({
    role,
    email: z.string().trim().toLowerCase().email().max(254).optional().describe('Restrict the invitation to this verified e-mail address'),
  }),
  output: invitationSchema.extend({ token: z.string().describe('The one-time invitation token; only its hash is stored') }),
  rest: { method: 'POST', path: '/api/organization/invitations', status: 201 },
  mcp: false,
  async handler(input, ctx) {
    const { invitation, token } = await createInvitation(ctx.services.store, requirePrincipal(ctx), {
      ...input,
      ip: ctx.ip,
      quota: ctx.quotas?.pendingInvitations,
      members: ctx.quotas?.members,
    });
    return { ...invitation, token };
  },
});

const listInvitationsTool = defineTool({
  name: 'list_invitations',
  title: 'List invitations',
  description: "The organization's invitations, newest first, with their status (pending, accepted, revoked, expired). Tokens are never shown again.",
  scope: 'session',
  input: z.object({}),
  output: z.array(invitationSchema),
  rest: { method: 'GET', path: '/api/organization/invitations' },
  mcp: false,
  handler: (_input, ctx) => listInvitations(ctx.services.store, requirePrincipal(ctx)),
});

const revokeInvitationTool = defineTool({
  name: 'revoke_invitation',
  title: 'Revoke an invitation',
  description: 'Revokes a pending invitation: its token can no longer be accepted. An accepted invitation answers 409; remove the member instead.',
  scope: 'session',
  rateLimit: 'objectWritesPerOrganization',
  input: z.object({ invitationId: z.string().min(1).max(100).describe('Invitation id from list_invitations') }),
  output: invitationSchema,
  rest: { method: 'DELETE', path: '/api/organization/invitations/:invitationId', errors: ['conflict'] },
  mcp: false,
  handler: (input, ctx) => revokeInvitation(ctx.services.store, requirePrincipal(ctx), { ...input, ip: ctx.ip }),
});

const acceptInvitationTool = defineTool({
  name: 'accept_invitation',
  title: 'Accept an invitation',
  description: [
    'Adds the signed-in user to the organization of the invitation, with its role. An unknown, expired, used or revoked token answers 400 invitation_invalid; an organization already at its member bound answers 409 quota_exceeded and the invitation stays usable.',
    'The session stays in its current organization; switch with POST /api/auth/organization/switch.',
  ].join(' '),
  scope: 'session',
  quotas: ['members'],
  input: z.object({ token: z.string().trim().min(1).max(200).describe('The invitation token') }),
  output: z.object({ organization: organizationView }),
  rest: { method: 'POST', path: '/api/invitations/accept' },
  mcp: false,
  async handler({ token }, ctx) {
    const { organization, role } = await acceptInvitation(ctx.services.store, requirePrincipal(ctx), {
      token,
      ip: ctx.ip,
      members: ctx.quotas?.members,
    });
    return { organization: { ...organization, role } };
  },
});

const switchOrganizationTool = defineTool({
  name: 'switch_organization',
  title: 'Switch the active organization',
  description: 'Makes another organization you belong to the active one of this session. Any other id answers 404 not_found.',
  scope: 'session',
  input: z.object({ organizationId: z.string().min(1).max(100).describe('An organization id from GET /api/auth/session (organizations)') }),
  output: z.object({ organization: organizationView }),
  rest: { method: 'POST', path: '/api/auth/organization/switch' },
  rateLimit: 'objectWritesPerOrganization',
  mcp: false,
  async handler({ organizationId }, ctx) {
    const organization = await switchOrganization(ctx.services.store, ctx.services.sessions, requirePrincipal(ctx), { organizationId, ip: ctx.ip });
    return { organization };
  },
});

export const memberTools = [
  listMembersTool,
  changeMemberRoleTool,
  removeMemberTool,
  createInvitationTool,
  listInvitationsTool,
  revokeInvitationTool,
  acceptInvitationTool,
  switchOrganizationTool,
];
