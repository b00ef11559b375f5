import { parseArgs } from 'node:util';
import type { Config } from '../config.ts';
import { readAdvertisedBaseUrl } from '../advertised-base-url.ts';
import { createSignInLink, signInLinkUrl, SIGN_IN_LINK_TTL_MS } from '../auth/sign-in-links.ts';
import { recordAudit } from '../org/audit-log.ts';
import { orgSlug, withRuntime } from './keys.ts';
import { UsageError } from './usage.ts';

/**
 * `flowgate open [--org SLUG]`: a one-time link that opens the dashboard
 * signed in as the organization's owner, for servers with no browser wallet
 * at hand. Whoever can run this on the data directory holds the master key
 * anyway; the link itself works once, within five minutes, and is audited.
 */
export async function open(config: Config, args: string[]) {
  const { values } = parseArgs({ args, options: { org: { type: 'string' } }, strict: true });
  const slug = orgSlug(values.org);
  await withRuntime(config, async ({ services }) => {
    const exists = await services.store.selectFrom('organizations').select('id').where('slug', '=', slug).executeTakeFirst();
    if (!exists) throw new UsageError(`No organization "${slug}" in ${config.dataDir}.`);
    const { organization, owner } = await services.organizations.ensure(slug);
    const { token, expiresAt } = await createSignInLink(services.store, { userId: owner.id, organizationId: organization.id });
    await recordAudit(services.store, {
      organizationId: organization.id,
      actor: { kind: 'cli' },
      action: 'sign_in_link_created',
      target: owner.id,
      details: { expiresAt },
    });
    // The gateway running on this data directory knows its real port; the configured URL is the fallback.
    const base = readAdvertisedBaseUrl(config.dataDir) ?? config.baseUrl;
    console.log(
      `Open this link in a browser within ${SIGN_IN_LINK_TTL_MS / 60_000} minutes to sign in to organization ${organization.slug} as its owner (works once):`,
    );
    console.log(signInLinkUrl(base, token));
  });
}
