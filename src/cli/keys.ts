import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../config.ts';
import { isKeyScope, KEY_RECHECK_MS, KEY_SCOPES, type ApiKeyRecord } from '../auth/keys.ts';
import { DEFAULT_ORGANIZATION_SLUG } from '../org/organizations.ts';
import { recordAudit } from '../org/audit-log.ts';
import { databaseFile } from '../store/db.ts';
import { json, oneLine, table } from './format.ts';
import { UsageError } from './usage.ts';

/**
 * `flowgate keys create|list|revoke`: the host operator's key management,
 * straight on the data directory's database (whoever can read the data
 * directory holds the master key anyway). Every change is audited as `cli`.
 */

export const CLI_ACTOR = { kind: 'cli' } as const;

/**
 * Commands that act on a running deployment's data must never create a second,
 * empty database (its keys would be unknown to the gateway).
 */
function requireExistingDatabase(config: Config): void {
  if (config.databaseUrl) return; // PostgreSQL: the URL names the deployment's database (a wrong one fails to connect or has no keys).
  requireSqliteDatabase(config.dataDir);
}

/** The data directory's SQLite database exists, or a UsageError naming where it looked. */
export function requireSqliteDatabase(dataDir: string, how = 'Set FLOWGATE_DATA_DIR'): void {
  if (fs.existsSync(databaseFile(dataDir))) return;
  throw new UsageError(
    `No Flowgate database in ${dataDir} (looked for ${path.basename(databaseFile(dataDir))}). ` +
      `${how} to the data directory of your gateway, or start the gateway once there with \`flowgate serve\`.`,
  );
}

export function orgSlug(value: string | undefined): string {
  const slug = (value ?? DEFAULT_ORGANIZATION_SLUG).trim();
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) throw new UsageError(`--org must be a lowercase slug of letters, digits and dashes (got "${slug}")`);
  return slug;
}

export async function withRuntime<T>(
  config: Config,
  body: (runtime: Awaited<ReturnType<typeof import('../gateway.ts').openRuntime>>) => Promise<T>,
): Promise<T> {
  requireExistingDatabase(config);
  const { openRuntime } = await import('../gateway.ts');
  const runtime = await openRuntime(config);
  try {
    return await body(runtime);
  } finally {
    await runtime.close();
  }
}

export async function keysCreate(config: Config, args: string[]) {
  const { values } = parseArgs({
    args,
    options: { name: { type: 'string' }, scope: { type: 'string' }, org: { type: 'string' } },
    strict: true,
  });
  if (!values.name?.trim()) throw new UsageError('keys create needs --name NAME');
  const scope = values.scope ?? null;
  if (scope !== null && !isKeyScope(scope))
    throw new UsageError(`--scope must be one of ${KEY_SCOPES.join(', ')} (got "${scope}"); omit it for an unrestricted key`);
  const slug = orgSlug(values.org);

  await withRuntime(config, async ({ services }) => {
    const { organization, owner, created } = await services.organizations.ensure(slug);
    const { record, key } = await services.keys.create({
      organizationId: organization.id,
      userId: owner.id,
      name: values.name!.trim(),
      scope,
      alongside: (db, made) =>
        recordAudit(db, {
          organizationId: organization.id,
          actor: CLI_ACTOR,
          action: 'key_created',
          target: made.id,
          details: { name: made.name, prefix: made.prefix, scope: made.scope },
        }),
    });
    console.log(`${created ? 'Created organization' : 'Organization'}: ${organization.slug} (${organization.id})`);
    console.log(`Key ${record.id} "${record.name}", scope ${record.scope ?? 'unrestricted'}; shown once:`);
    console.log(key);
  });
}

const keyJson = (k: ApiKeyRecord) => ({
  id: k.id,
  prefix: k.prefix,
  name: k.name,
  scope: k.scope,
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
  revokedAt: k.revokedAt,
});

export async function keysList(config: Config, args: string[]) {
  const { values } = parseArgs({ args, options: { org: { type: 'string' }, json: { type: 'boolean' } }, strict: true });
  const slug = orgSlug(values.org);
  await withRuntime(config, async ({ services }) => {
    const organization = await services.store.selectFrom('organizations').select(['id', 'slug']).where('slug', '=', slug).executeTakeFirst();
    if (!organization) throw new UsageError(`No organization "${slug}" in ${config.dataDir}.`);
    const keys = await services.keys.list(organization.id, { includeRevoked: true });
    if (values.json) {
      console.log(json(keys.map(keyJson)));
      return;
    }
    if (keys.length === 0) {
      console.log(`No API keys in organization ${slug}.`);
      return;
    }
    const rows = keys.map((k) => [k.id, k.prefix, oneLine(k.name, 30), k.scope ?? 'unrestricted', k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ?? '-']);
    console.log(table(['ID', 'PREFIX', 'NAME', 'SCOPE', 'CREATED', 'LAST USED', 'REVOKED'], rows));
  });
}

export async function keysRevoke(config: Config, args: string[]) {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  if (positionals.length !== 1 || !positionals[0]!.trim()) throw new UsageError('keys revoke needs exactly one KEY_ID (see `flowgate keys list`)');
  const keyId = positionals[0]!.trim();
  await withRuntime(config, async ({ services }) => {
    const row = await services.store.selectFrom('api_keys').select(['organization_id', 'revoked_at']).where('id', '=', keyId).executeTakeFirst();
    if (!row) throw new UsageError(`No API key ${JSON.stringify(keyId)} in ${config.dataDir} (\`flowgate keys list --org SLUG\` shows the ids).`);
    if (row.revoked_at) {
      console.log(`Key ${keyId} was already revoked at ${row.revoked_at}.`);
      return;
    }
    const revoked = (await services.keys.revoke(row.organization_id, keyId, (db, record) =>
      recordAudit(db, {
        organizationId: row.organization_id,
        actor: CLI_ACTOR,
        action: 'key_revoked',
        target: keyId,
        details: { name: record.name, prefix: record.prefix, via: 'cli' },
      }),
    ))!;
    console.log(
      `Revoked key ${keyId} (${revoked.prefix}…, "${revoked.name}") at ${revoked.revokedAt}; a running gateway refuses it within ${KEY_RECHECK_MS / 1000} s.`,
    );
  });
}
