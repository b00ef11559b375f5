import type { Store } from '../store/db.ts';
import { assertRoom } from './quotas.ts';
import { newId, nowIso } from '../ids.ts';
import { notFound, ServiceError } from '../errors.ts';

/**
 * Organization tags (SPEC "Organization tag"): one optional tag per workflow
 * (`workflows.tag_id`). Names are unique per organization, ignoring case.
 */

export const TAG_NAME_MAX = 100;

export interface Tag {
  id: string;
  name: string;
  color: string;
  organizationId: string;
  userId: string;
  workflowCount: number;
  createdAt: string;
  updatedAt: string;
}

/** The organization's tags with their workflow counts; one query. */
function selectTags(db: Store, organizationId: string) {
  return db
    .selectFrom('tags')
    .selectAll('tags')
    .select((eb) =>
      eb
        .selectFrom('workflows')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('workflows.tag_id', '=', 'tags.id')
        .where('workflows.organization_id', '=', organizationId)
        .as('workflow_count'),
    )
    .where('tags.organization_id', '=', organizationId);
}

type TagRow = Awaited<ReturnType<ReturnType<typeof selectTags>['executeTakeFirstOrThrow']>>;

const toTag = (row: TagRow): Tag => ({
  id: row.id,
  name: row.name,
  color: row.color,
  organizationId: row.organization_id,
  userId: row.user_id,
  workflowCount: Number(row.workflow_count ?? 0),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export async function listTags(store: Store, organizationId: string): Promise<Tag[]> {
  const rows = await selectTags(store, organizationId).orderBy('tags.name').orderBy('tags.id').execute();
  return rows.map(toTag);
}

/** Another organization's tag is reported exactly like a missing one, so ids cannot be probed. */
export async function getTag(store: Store, organizationId: string, tagId: string): Promise<Tag> {
  const row = await selectTags(store, organizationId).where('tags.id', '=', tagId).executeTakeFirst();
  if (!row) throw notFound(`Tag ${JSON.stringify(tagId)} not found in this organization. Call list_tags for the tags that exist.`, { tagId });
  return toTag(row);
}

/** A tag name as compared: Unicode-folded in JS, so both stores agree (SQLite's lower() folds ASCII only: `Ärger` and `äRGER` were two tags there, one on PostgreSQL). */
const folded = (name: string) => name.normalize('NFKC').toLowerCase();

/** 409 when another tag of the organization already has this name (any case). */
async function assertNameFree(db: Store, organizationId: string, name: string, exceptId?: string): Promise<void> {
  let query = db.selectFrom('tags').select(['id', 'name']).where('organization_id', '=', organizationId);
  if (exceptId) query = query.where('id', '!=', exceptId);
  // An organization's tags are bounded by its quota: compared here rather than by the database's own folding.
  const wanted = folded(name);
  const existing = (await query.execute()).find((tag) => folded(tag.name) === wanted);
  if (existing) {
    throw new ServiceError(
      409,
      'conflict',
      `A tag named ${JSON.stringify(existing.name)} already exists in this organization; use its id or choose another name.`,
      {
        field: 'name',
        existingTagId: existing.id,
      },
    );
  }
}

export async function createTag(
  store: Store,
  input: {
    organizationId: string;
    userId: string;
    name: string;
    color: string;
    /** Tags the organization may hold (config.quotas.tags); unset: no bound. */ quota?: number;
  },
): Promise<Tag> {
  // Check and insert in one transaction, so two concurrent creates cannot both pass the check.
  return store.transaction().execute(async (trx) => {
    await assertNameFree(trx, input.organizationId, input.name);
    await assertRoom(trx, 'tags', input.quota, input.organizationId);
    const now = nowIso();
    const row = {
      id: newId(),
      organization_id: input.organizationId,
      user_id: input.userId,
      name: input.name,
      color: input.color,
      created_at: now,
      updated_at: now,
    };
    await trx.insertInto('tags').values(row).execute();
    return toTag({ ...row, workflow_count: 0 });
  });
}

/** Changes only the fields given. */
export async function updateTag(store: Store, organizationId: string, tagId: string, patch: { name?: string; color?: string }): Promise<Tag> {
  return store.transaction().execute(async (trx) => {
    await getTag(trx, organizationId, tagId);
    if (patch.name !== undefined) await assertNameFree(trx, organizationId, patch.name, tagId);
    await trx
      .updateTable('tags')
      .set({ ...patch, updated_at: nowIso() })
      .where('id', '=', tagId)
      .where('organization_id', '=', organizationId)
      .execute();
    return getTag(trx, organizationId, tagId);
  });
}

/** Deletes the tag; its workflows are kept and become untagged. Returns how many were untagged. */
export async function deleteTag(store: Store, organizationId: string, tagId: string): Promise<{ id: string; untaggedWorkflows: number }> {
  return store.transaction().execute(async (trx) => {
    await getTag(trx, organizationId, tagId);
    // The foreign key (ON DELETE SET NULL) would untag them too; doing it
    // explicitly gives the count and does not depend on the FK pragma.
    const untagged = await trx.updateTable('workflows').set({ tag_id: null }).where('tag_id', '=', tagId).executeTakeFirst();
    await trx.deleteFrom('tags').where('id', '=', tagId).where('organization_id', '=', organizationId).execute();
    return { id: tagId, untaggedWorkflows: Number(untagged.numUpdatedRows) };
  });
}
