import { sql, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { Store } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { QUOTA_VARIABLES, type QuotaName } from '../config.ts';
import { ServiceError } from '../errors.ts';

/**
 * Refuses one more stored object when the organization already holds its
 * quota (QUOTA_VARIABLES): 409 `quota_exceeded` with `resource` and `limit`,
 * saying how to make room. `held` selects the organization's counted rows;
 * at most `limit` of them are read, so a full organization costs no more than
 * a nearly full one. Call it inside the write's transaction: writes are
 * serialized (SQLite, the PostgreSQL writer lock), so two concurrent creates
 * cannot both pass. An undefined limit is no bound (the catalog's own
 * organization).
 */
export async function assertRoom(
  db: Store | Transaction<Database>,
  name: QuotaName,
  limit: number | undefined,
  held: SelectQueryBuilder<Database, keyof Database, object>,
): Promise<void> {
  if (limit === undefined) return;
  const { n } = await db
    .selectFrom(held.select(sql.lit(1).as('one')).limit(limit).as('held'))
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  if (Number(n) < limit) return;
  throw quotaExceeded(name, limit);
}

export function quotaExceeded(name: QuotaName, limit: number): ServiceError {
  const spec = QUOTA_VARIABLES[name];
  return new ServiceError(409, 'quota_exceeded', `This organization already holds ${limit} ${spec.noun} (${spec.variable}); to add another, ${spec.remedy}.`, {
    limit,
    resource: name,
  });
}
