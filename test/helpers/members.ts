import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Role } from '../../src/auth/principal.ts';
import { nowIso } from '../../src/ids.ts';
import type { TestGateway } from './gateway.ts';
import { browserClient, signIn, type BrowserClient } from './session.ts';

/** A signed-in wallet user: its browser client (cookie jar), account, user id and own organization. */
export interface SignedInUser {
  client: BrowserClient;
  account: ReturnType<typeof privateKeyToAccount>;
  userId: string;
  /** The organization its first sign-in created (it is the owner). */
  ownOrganizationId: string;
}

export async function newSignedInUser(gw: TestGateway): Promise<SignedInUser> {
  const account = privateKeyToAccount(generatePrivateKey());
  const client = browserClient(gw.url);
  const signed = await signIn(client, gw.url, account);
  return { client, account, userId: signed.user.id, ownOrganizationId: signed.organization.id };
}

/** Adds a membership straight into the store (tests of what a role may do, independent of invitations). */
export async function addMember(gw: TestGateway, organizationId: string, userId: string, role: Role): Promise<void> {
  await gw.gateway.services.store.insertInto('memberships').values({ organization_id: organizationId, user_id: userId, role, created_at: nowIso() }).execute();
}

/** Makes `organizationId` the active organization of the user's session (the real route). */
export async function switchTo(user: SignedInUser, organizationId: string): Promise<void> {
  const res = await user.client.fetch('/api/auth/organization/switch', { method: 'POST', json: { organizationId } });
  if (res.status !== 200) throw new Error(`switch: ${res.status} ${JSON.stringify(res.body)}`);
}
