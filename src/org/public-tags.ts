import { slugify } from '../text/slug.ts';
import type { Store } from '../store/db.ts';
import { versioned } from '../store/versioned.ts';
import { deepFreeze } from '../immutable.ts';
import { assertRoom } from './quotas.ts';
import { newId, nowIso } from '../ids.ts';
import { badRequest, ServiceError } from '../errors.ts';

/**
 * Public tags (SPEC "Public tag"): a global vocabulary for published
 * workflows, identified by a slug derived from the name. Shared by every
 * organization, so a slug is created once and then reused.
 */

export const PUBLIC_TAG_NAME_MAX = 100;

export interface PublicTag {
  id: string;
  name: string;
  slug: string;
  workflowCount: number;
  createdAt: string;
}

/** Every public tag with the number of public workflows carrying it; one query. */
function selectPublicTags(db: Store) {
  return db
    .selectFrom('public_tags')
    .select(['public_tags.id', 'public_tags.name', 'public_tags.slug', 'public_tags.created_at'])
    .select((eb) =>
      eb
        .selectFrom('workflow_public_tags')
        .innerJoin('workflows', 'workflows.id', 'workflow_public_tags.workflow_id')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('workflow_public_tags.public_tag_id', '=', 'public_tags.id')
        .where('workflows.visibility', '=', 'public')
        .as('workflow_count'),
    );
}

type PublicTagRow = Awaited<ReturnType<ReturnType<typeof selectPublicTags>['executeTakeFirstOrThrow']>>;

const toPublicTag = (row: PublicTagRow): PublicTag => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  workflowCount: Number(row.workflow_count ?? 0),
  createdAt: row.created_at,
});

/**
 * Every public tag, read again only when a change to the tags, their links or a workflow's visibility has
 * moved the counter (migration 030): the shared vocabulary grows with every tenant (each may create its
 * quota of tags, none deleted), and any anonymous client may read it whole.
 */
const current = versioned(
  'public_tags_version',
  async (store) => {
    const rows = await selectPublicTags(store).orderBy('public_tags.name').orderBy('public_tags.id').execute();
    return deepFreeze(rows.map(toPublicTag));
  },
  (tags) => tags.length,
);

/** Frozen: the same value for every caller until the counter moves (the registry then shapes and serializes it once). */
export async function listPublicTags(store: Store): Promise<PublicTag[]> {
  return (await current(store)).value;
}

/**
 * Creates a public tag. A name whose slug is taken answers 409 with the
 * existing tag under `existing`, so a caller can use its id without a second call.
 */
export async function createPublicTag(
  store: Store,
  input: { name: string; organizationId: string; /** Public tags the organization may create (config.quotas.publicTags); unset: no bound. */ quota?: number },
): Promise<PublicTag> {
  const slug = slugify(input.name);
  if (!slug) {
    throw badRequest(
      'invalid_input',
      `name: ${JSON.stringify(input.name)} has no ASCII letters or digits to build a slug from; use a name such as "DeFi Yield".`,
      {
        issues: [{ path: 'name', message: 'must contain at least one ASCII letter or digit', code: 'custom' }],
      },
    );
  }
  return store.transaction().execute(async (trx) => {
    const existing = await selectPublicTags(trx).where('public_tags.slug', '=', slug).executeTakeFirst();
    if (existing) {
      throw new ServiceError(
        409,
        'conflict',
        `A public tag with slug "${slug}" already exists (${JSON.stringify(existing.name)}); use its id ${existing.id}.`,
        {
          field: 'name',
          existing: toPublicTag(existing),
        },
      );
    }
    await assertRoom(trx, 'publicTags', input.quota, input.organizationId);
    const row = { id: newId(), name: input.name, slug, created_by_organization_id: input.organizationId, created_at: nowIso() };
    await trx.insertInto('public_tags').values(row).execute();
    return toPublicTag({ ...row, workflow_count: 0 });
  });
}
