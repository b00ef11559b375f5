import { parseArgs } from 'node:util';
import type { Config } from '../config.ts';
import { listGrants, revokeGrant } from '../auth/oauth/grants.ts';
import { json, oneLine, table } from './format.ts';
import { UsageError } from './usage.ts';
import { CLI_ACTOR, orgSlug, withRuntime } from './keys.ts';

/**
 * `flowgate oauth list|revoke`: the host operator's view of connected OAuth
 * clients (grants), straight on the data directory's database. A revocation
 * is audited as `cli` and refused by a running gateway at its next request.
 */

export async function oauthList(config: Config, args: string[]) {
  const { values } = parseArgs({ args, options: { org: { type: 'string' }, json: { type: 'boolean' } }, strict: true });
  const slug = orgSlug(values.org);
  await withRuntime(config, async ({ services }) => {
    const organization = await services.store.selectFrom('organizations').select(['id', 'slug']).where('slug', '=', slug).executeTakeFirst();
    if (!organization) throw new UsageError(`No organization "${slug}" in ${config.dataDir}.`);
    const grants = await listGrants(services.store, organization.id, { includeRevoked: true });
    if (values.json) {
      console.log(json(grants));
      return;
    }
    if (grants.length === 0) {
      console.log(`No connected OAuth clients in organization ${slug}.`);
      return;
    }
    const rows = grants.map((g) => [g.id, oneLine(g.clientName ?? g.clientId, 30), g.scope, g.resource, g.createdAt, g.lastUsedAt ?? '-', g.revokedAt ?? '-']);
    console.log(table(['ID', 'CLIENT', 'SCOPE', 'RESOURCE', 'CREATED', 'LAST USED', 'REVOKED'], rows));
  });
}

export async function oauthRevoke(config: Config, args: string[]) {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  if (positionals.length !== 1 || !positionals[0]!.trim()) throw new UsageError('oauth revoke needs exactly one GRANT_ID (see `flowgate oauth list`)');
  const grantId = positionals[0]!.trim();
  await withRuntime(config, async ({ services }) => {
    const row = await services.store.selectFrom('oauth_grants').select(['revoked_at']).where('id', '=', grantId).executeTakeFirst();
    if (!row) throw new UsageError(`No connected client ${JSON.stringify(grantId)} in ${config.dataDir} (\`flowgate oauth list --org SLUG\` shows the ids).`);
    if (!(await revokeGrant(services.store, grantId, 'user', { actor: CLI_ACTOR }))) {
      console.log(`Connected client ${grantId} was already revoked at ${row.revoked_at}.`);
      return;
    }
    console.log(`Revoked connected client ${grantId}: its tokens are refused from the next request on.`);
  });
}
