import { sql, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { Store } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { QUOTA_VARIABLES, type QuotaName } from '../config.ts';
import { ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';

/**
 * How many stored objects of each kind an organization holds, against its
 * bounds (QUOTA_VARIABLES). COUNTED says once which rows each bound counts:
 * the refusal of one more (assertRoom) and the usage an organization is shown
 * (quotaUsage) read the same rows.
 */

type Db = Store | Transaction<Database>;

const COUNTED: Record<QuotaName, (db: Db, organizationId: string) => SelectQueryBuilder<Database, keyof Database, object>> = {
  workflows: (db, o) => db.selectFrom('workflows').where('organization_id', '=', o),
  projects: (db, o) => db.selectFrom('projects').where('organization_id', '=', o),
  tags: (db, o) => db.selectFrom('tags').where('organization_id', '=', o),
  integrations: (db, o) => db.selectFrom('integrations').where('organization_id', '=', o),
  apiKeys: (db, o) => db.selectFrom('api_keys').where('organization_id', '=', o).where('revoked_at', 'is', null),
  webhookKeys: (db, o) => db.selectFrom('user_api_keys').where('organization_id', '=', o).where('revoked_at', 'is', null),
  members: (db, o) => db.selectFrom('memberships').where('organization_id', '=', o),
  pendingInvitations: (db, o) =>
    db
      .selectFrom('invitations')
      .where('organization_id', '=', o)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', nowIso()),
  publicTags: (db, o) => db.selectFrom('public_tags').where('created_by_organization_id', '=', o),
  publicWorkflows: (db, o) => db.selectFrom('workflows').where('organization_id', '=', o).where('visibility', '=', 'public'),
  listings: (db, o) => db.selectFrom('workflow_listings').where('organization_id', '=', o).where('listed', '=', 1),
};

/** How many counted rows the organization holds, reading at most `upTo` of them. */
async function held(db: Db, name: QuotaName, organizationId: string, upTo?: number): Promise<number> {
  let rows = COUNTED[name](db, organizationId).select(sql.lit(1).as('one'));
  if (upTo !== undefined) rows = rows.limit(upTo);
  const { n } = await db
    .selectFrom(rows.as('held'))
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(n);
}

/**
 * Refuses one more object when the organization already holds `limit`: 409
 * `quota_exceeded` with `resource` and `limit`, saying how to make room. At
 * most `limit` rows are read, so a full organization costs no more than a
 * nearly full one. Call it inside the write's transaction: writes are
 * serialized (SQLite, the PostgreSQL writer lock), so two concurrent creates
 * cannot both pass. An undefined limit is no bound (the catalog's own
 * organization, the operator's CLI).
 */
export async function assertRoom(db: Db, name: QuotaName, limit: number | undefined, organizationId: string): Promise<void> {
  if (limit === undefined) return;
  if ((await held(db, name, organizationId, limit)) < limit) return;
  const spec = QUOTA_VARIABLES[name];
  throw new ServiceError(409, 'quota_exceeded', `This organization already holds ${limit} ${spec.noun} (${spec.variable}); to add another, ${spec.remedy}.`, {
    limit,
    resource: name,
  });
}

/** Each bound with what the organization holds against it. */
export async function quotaUsage(db: Db, organizationId: string, limits: Record<QuotaName, number>) {
  const names = Object.keys(QUOTA_VARIABLES) as QuotaName[];
  const used = await Promise.all(names.map((name) => held(db, name, organizationId)));
  return names.map((resource, i) => {
    const { noun, variable } = QUOTA_VARIABLES[resource];
    return { resource, label: noun[0]!.toUpperCase() + noun.slice(1), used: used[i]!, limit: limits[resource], variable };
  });
}
